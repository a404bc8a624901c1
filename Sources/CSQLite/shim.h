// The system's SQLite (Debian: libsqlite3-dev; Apple platforms: the SDK's), for AvenuesSQLite only:
// the Avenues product itself needs no headers.
#include <sqlite3.h>
