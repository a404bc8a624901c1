#ifndef AVENUES_EXAMPLES_STANDARD_DESCRIPTORS_H
#define AVENUES_EXAMPLES_STANDARD_DESCRIPTORS_H

/// Which of descriptors 0, 1 and 2 were closed when the process started (bit n: descriptor n),
/// before anything else could open a file under their number. Each was given /dev/null then.
int avenues_examples_closed_standard_descriptors(void);

#endif
