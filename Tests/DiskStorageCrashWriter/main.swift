import Avenues
import Foundation

// Writes CrashPayload entries 0..<count into a DiskStorage, printing each index once its write has
// returned, until it is killed. Used by DiskStorageCrashTests.
let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: DiskStorageCrashWriter <folder> <count>\n".utf8))
    exit(64)
}
let storage = DiskStorage<String>(directory: URL(fileURLWithPath: arguments[1], isDirectory: true))
for index in 0..<count {
    do {
        try storage.write(CrashPayload.bytes(index), for: CrashPayload.key(index))
    } catch {
        FileHandle.standardError.write(Data("write \(index) failed: \(error)\n".utf8))
        exit(1)
    }
    FileHandle.standardOutput.write(Data("\(index)\n".utf8))  // unbuffered: the parent sees it at once
}
