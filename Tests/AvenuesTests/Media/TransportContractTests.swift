import Foundation
import Testing
@testable import Avenues

/// Transports of one's own that break ``DownloadSink``'s contract in the order of their calls: what
/// AsyncMedia caches from them is the body as its head describes it, or nothing, and each caller
/// gets an answer.
@Suite("AsyncMedia with transports that break the sink's order")
struct TransportContractTests {
    /// Answers each request with `script`, on a thread of its own or (`inline`) inside `start`.
    final class ScriptedTransport: DownloadTransport, Sendable {
        let script: @Sendable (any DownloadSink) -> Void
        let inline: Bool

        init(inline: Bool, _ script: @escaping @Sendable (any DownloadSink) -> Void) {
            self.script = script
            self.inline = inline
        }

        var decodesContentCodings: Bool { false }

        func start(_ request: DownloadRequest, into sink: any DownloadSink) -> DownloadHandle {
            if inline {
                script(sink)
            } else {
                Thread { [script] in script(sink) }.start()
            }
            return DownloadHandle {}
        }
    }

    static let body = Data((0..<100).map { UInt8($0) })

    static func head(_ sink: any DownloadSink, status: Int = 200, length: String = "100") -> Bool {
        sink.head(status: status, fields: [HTTPField(name: "Content-Length", value: length)])
    }

    static func send(_ sink: any DownloadSink, _ data: Data = body) -> Bool {
        data.withUnsafeBytes { sink.body($0) }
    }

    /// A script, whether it runs inside `start`, and whether the whole body is a valid answer.
    struct Script: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let inline: Bool
        let valid: Bool
        let run: @Sendable (any DownloadSink) -> Void
    }

    static let scripts: [Script] = [
        Script(testDescription: "the body before its head", inline: false, valid: false) { sink in
            _ = send(sink)
            _ = head(sink)
            _ = send(sink)
            sink.end(nil)
        },
        Script(testDescription: "a piece of the body before its head, inside start", inline: true, valid: false) { sink in
            _ = send(sink, body.prefix(10))
            _ = head(sink, length: "90")
            _ = send(sink, body.suffix(90))
            sink.end(nil)
        },
        Script(testDescription: "a second head", inline: false, valid: false) { sink in
            _ = head(sink)
            _ = head(sink, length: "5")
            _ = send(sink)
            sink.end(nil)
        },
        Script(testDescription: "an end, then another with an error", inline: true, valid: true) { sink in
            _ = head(sink)
            _ = send(sink)
            sink.end(nil)
            sink.end(URLError(.networkConnectionLost))
        },
        Script(testDescription: "body and head after the end", inline: false, valid: true) { sink in
            _ = head(sink)
            _ = send(sink)
            sink.end(nil)
            _ = send(sink)
            _ = head(sink)
        },
        Script(testDescription: "an end with no head", inline: false, valid: false) { sink in sink.end(nil) },
        Script(testDescription: "a status outside HTTP's", inline: false, valid: false) { sink in
            _ = head(sink, status: Int.min)
            _ = send(sink)
            sink.end(nil)
        },
        Script(testDescription: "an informational head it should have skipped", inline: false, valid: false) { sink in
            _ = head(sink, status: 103)
            _ = send(sink)
            sink.end(nil)
        },
    ]

    @Test(arguments: scripts)
    func whatIsCachedIsTheBodyItsHeadDescribesOrNothing(script: Script) async throws {
        let folder = TemporaryFolder()
        let media = AsyncMedia(directory: folder.child("media"), transport: ScriptedTransport(inline: script.inline, script.run))
        let url = try #require(URL(string: "http://127.0.0.1:9/file.bin"))
        if script.valid {
            let file = try await media.file(for: url)
            #expect(try Data(contentsOf: file) == Self.body)
        } else {
            await #expect(throws: AsyncMediaError.self) { try await media.file(for: url) }
            #expect(media.cachedFile(for: url) == nil)
        }
    }

    /// A transport that calls the sink from several threads at once — four pieces of the body and the
    /// end together. What is cached is whole, or nothing is, and no piece touches the file once the
    /// end let it go: before, the end's close raced the pieces' writes on the writer's state
    /// (ThreadSanitizer: a data race, `Writer.close` against `Writer.write`).
    @Test func callsFromSeveralThreadsAtOnceCacheAWholeFileOrNothing() async throws {
        let folder = TemporaryFolder()
        let piece = Data(repeating: 0x61, count: 1_000)
        let transport = ScriptedTransport(inline: false) { sink in
            guard Self.head(sink, length: "4000") else { return sink.end(nil) }
            DispatchQueue.concurrentPerform(iterations: 5) { call in
                if call < 4 { _ = Self.send(sink, piece) } else { sink.end(nil) }
            }
        }
        let media = AsyncMedia(directory: folder.child("media"), transport: transport)
        var cached = 0
        for round in 0..<200 {
            let url = try #require(URL(string: "http://127.0.0.1:9/\(round).bin"))
            do {
                let file = try await media.file(for: url)
                #expect(try Data(contentsOf: file) == Data(repeating: 0x61, count: 4_000), "round \(round)")
                cached += 1
            } catch {
                #expect(error is AsyncMediaError, "round \(round): \(error)")
                #expect(media.cachedFile(for: url) == nil, "round \(round)")
            }
        }
        print("whole files cached: \(cached) of 200")
    }
}
