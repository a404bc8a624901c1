import Avenues
import CAvenuesNetwork
import Foundation

// A child process for the DiskStorage tests.
//
//   DiskStorageCrashWriter <folder> <count>
//       Writes CrashPayload entries 0..<count, printing each index once its write has returned,
//       until it is killed (the crash-safety test).
//   DiskStorageCrashWriter share <folder> <writes> <sizeLimit> <seed>
//       Writes `writes` entries of 1–4 KiB under 300 keys into a folder other processes write too,
//       sampling after each write the entry bytes on disk; prints "peak <bytes>" at the end (the
//       several-processes test).
//   DiskStorageCrashWriter download <folder> <url>
//       Downloads <url> with AsyncMedia into <folder>, printing "started" once the download runs,
//       until it is killed (the resume test).
//   DiskStorageCrashWriter exit-mid-download <folder> <url>
//       Starts downloading <url> (a body that never ends) and calls exit(0) once bytes arrive; its
//       last exit handler prints "steps during exit <n>": how many times libcurl stepped while
//       exit() ran (the exit test expects none).
//   DiskStorageCrashWriter fork-and-exit <folder> <url>
//       Starts downloading <url> (a body that never ends), forks once bytes arrive, and both the
//       child and the parent call exit(0); each prints "<child|parent> exit waits given up <n>"
//       (the fork test expects none: the child has no curl thread to wait for).
let arguments = CommandLine.arguments
let firstProcess = getpid()

/// Starts downloading `url` (a body that never ends) and returns once its first bytes arrived.
func startDownloadAndWaitForBytes(_ media: AsyncMedia, _ url: URL) {
    let progress = media.progress(for: url)
    let moving = DispatchSemaphore(value: 0)
    Task.detached { _ = try? await media.file(for: url) }
    Task.detached {
        for await step in progress where step.received > 0 {
            moving.signal()
            break
        }
    }
    moving.wait()
}

#if os(Linux)  // fork() is unavailable to Swift on Apple platforms
if arguments.count == 4, arguments[1] == "fork-and-exit", let url = URL(string: arguments[3]) {
    atexit {  // runs after the transport's exit handler, registered later
        let line = "\(getpid() == firstProcess ? "parent" : "child") exit waits given up \(avenues_curl_exit_waits_given_up())\n"
        _ = line.withCString { write(1, $0, strlen($0)) }
    }
    let media = AsyncMedia(directory: URL(fileURLWithPath: arguments[2], isDirectory: true))
    startDownloadAndWaitForBytes(media, url)
    let child = fork()
    if child == 0 { exit(0) }
    var status: Int32 = 0
    waitpid(child, &status, 0)
    exit(0)
}
#endif
if arguments.count == 4, arguments[1] == "exit-mid-download", let url = URL(string: arguments[3]) {
    // Registered before libcurl is loaded, so it runs after AsyncMedia's own exit handler: what it
    // counts is what the transport's thread does while the libraries are being torn down.
    atexit {
        let before = avenues_curl_perform_count()
        usleep(100_000)
        let line = "steps during exit \(avenues_curl_perform_count() &- before)\n"
        _ = line.withCString { write(1, $0, strlen($0)) }
    }
    let media = AsyncMedia(directory: URL(fileURLWithPath: arguments[2], isDirectory: true))
    startDownloadAndWaitForBytes(media, url)
    exit(0)
}
if arguments.count == 4, arguments[1] == "download", let url = URL(string: arguments[3]) {
    let media = AsyncMedia(directory: URL(fileURLWithPath: arguments[2], isDirectory: true))
    FileHandle.standardOutput.write(Data("started\n".utf8))
    let done = DispatchSemaphore(value: 0)
    Task.detached {  // not on the main actor, whose thread waits below
        do {
            _ = try await media.file(for: url)
            FileHandle.standardOutput.write(Data("done\n".utf8))
        } catch {
            FileHandle.standardError.write(Data("download failed: \(error)\n".utf8))
        }
        done.signal()
    }
    done.wait()
    exit(0)
}
if arguments.count == 6, arguments[1] == "share", let writes = Int(arguments[3]), let limit = Int(arguments[4]), let seed = UInt64(arguments[5]) {
    let folder = URL(fileURLWithPath: arguments[2], isDirectory: true)
    let storage = DiskStorage<String>(directory: folder, sizeLimit: limit)
    var state = seed | 1
    func next() -> Int {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return Int(truncatingIfNeeded: state >> 1)
    }
    var peak = 0
    for _ in 0..<writes {
        let size = 1_024 + next() % 3_072
        do {
            try storage.write(Data(repeating: UInt8(truncatingIfNeeded: size), count: size), for: "key-\(next() % 300)")
        } catch {
            FileHandle.standardError.write(Data("write failed: \(error)\n".utf8))
            exit(1)
        }
        peak = max(peak, CrashPayload.entryBytes(in: folder.path))
    }
    print("peak \(peak)")
    exit(0)
}
guard arguments.count == 3, let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: DiskStorageCrashWriter <folder> <count> | share <folder> <writes> <sizeLimit> <seed>\n".utf8))
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
