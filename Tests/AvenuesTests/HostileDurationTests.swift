import Foundation
import Testing
@testable import Avenues

/// Every `Duration` a caller can pass is clamped, never trapped on (seen 2026-11-23: `.seconds(1e19)`
/// trapped in `Duration.components`, and sleeps past 292 years trapped in the clocks).
@Suite("Durations beyond Int64 seconds", .timeLimit(.minutes(5)))
struct HostileDurationTests {
    static let forever: [Duration] = [.seconds(1e19), .seconds(Int64.max), .seconds(Int64.max) + .seconds(Int64.max)]

    @Test func conversionsClampInsteadOfTrapping() {
        for duration in Self.forever {
            #expect(Saturating.milliseconds(duration) == .max)
            #expect(Saturating.nanoseconds(duration) == .max)
            #expect(duration.seconds >= 9e18)
            #expect(Saturating.clamped(duration) == Saturating.longestDuration)
        }
        #expect(Saturating.milliseconds(.zero - .seconds(1e19)) == .min)
        #expect(Saturating.duration(seconds: .infinity) == Saturating.longestDuration)
        #expect(Saturating.duration(seconds: .nan) == .zero)
        #expect(Saturating.milliseconds(.milliseconds(1_500)) == 1_500)
    }

    @Test func aSleepOfCenturiesIsTakenInSleepsTheClockCanTake() async throws {
        let clock = SleepClock()
        let deadline = clock.now.advanced(by: .seconds(1e19))
        let sleeping = Task { try await Saturating.sleep(until: deadline, on: clock) }
        await eventually("it sleeps") { clock.sleepers == 1 }
        clock.advance(by: Saturating.longestSleep)
        await eventually("it sleeps again, for the next part") { clock.sleepers == 1 }
        sleeping.cancel()
        await #expect(throws: CancellationError.self) { try await sleeping.value }
    }

    @Test func aDiskStorageTimeToLiveOfForeverNeverExpires() throws {
        let folder = TemporaryFolder("forever")
        for timeToLive in Self.forever {
            let storage = DiskStorage<String>(directory: folder.child("cache"), timeToLive: timeToLive)
            storage.set(Data("kept".utf8), for: "k")
            #expect(storage.value(for: "k") == Data("kept".utf8))
            #expect(storage.lookup("k")?.isStale == false)
        }
    }

    @Test func aRetryPolicyOfForeverWaitsForeverWithoutTrapping() async {
        let work = ControlledWork<String, Int>()
        let policy = RetryPolicy(attempts: 3, base: .seconds(1e19), cap: .seconds(Int64.max) + .seconds(Int64.max))
        let avenue = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: AutoProcessor(work), retryPolicy: policy)
        let told = EventLog<Int>()
        avenue.onStateChange = { told.append($0) }
        avenue.prepareItem(for: "k", at: 0)
        await work.waitUntilStarted("k")
        work.fail("k", with: TestError("down"))
        await told.wait(for: 0)
        #expect(avenue.state(at: 0).retryAt != nil)
        avenue.prepareItem(for: "k", at: 0)  // still waiting: nothing starts
        #expect(work.starts(of: "k") == 1)
        var changed = policy
        changed.base = .seconds(Int64.max)  // fields set after init are clamped where they are used
        changed.jitter = 1
        #expect(changed.wait(afterFailure: 100, random: 1) <= Saturating.longestDuration)
        avenue.cancelAll()
    }

    @Test func followingEveryForeverOrEveryZeroDoesNotTrapOrSpin() async {
        let rows = PagedRows(source: ScriptedSource(count: 100), configuration: PagingConfiguration(pageSize: 10))
        rows.follow(every: .seconds(1e19))
        rows.follow(every: .zero)  // floored at 100 ms
        rows.follow(every: .zero - .seconds(5))
        rows.stopFollowing()
        rows.show(0..<10)
        await eventually("the first page loaded") { rows.item(at: 5) == 5 }
    }

    @Test func downloadLimitsClampEveryWayTheyAreSetAndADownloadUnderThemWorks() async throws {
        var limits = DownloadLimits(idleTimeout: .seconds(Int64.max), totalTimeout: .seconds(1e19))
        #expect(limits.idleTimeout == Saturating.longestDuration && limits.totalTimeout == Saturating.longestDuration)
        limits.idleTimeout = .seconds(1e19)
        #expect(limits.idleTimeout == Saturating.longestDuration)
        let server = try MediaServer()
        let folder = TemporaryFolder("limits")
        let media = AsyncMedia(directory: folder.child("media"), limits: limits)
        let file = try await media.file(for: server.url("/bytes/5000.bin"))
        #expect(try Data(contentsOf: file) == MediaServer.body(5_000))
    }
}
