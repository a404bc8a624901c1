import Testing
@testable import Avenues
import AvenuesTestSupport

/// One way to observe: an avenue's (and a paged list's) listeners — any number of observers, the
/// `onStateChange`/`onError` slot and `subscribe()` readers — are told every change, in the order
/// they were added.
@Suite("Observation", .timeLimit(.minutes(5)))
struct ObservationTests {
    @Test func everyListenerIsToldEachChangeInTheOrderTheyWereAdded() async {
        let f = AvenueFixture()  // its onStateChange and onError are set first
        let order = EventLog<String>()
        f.avenue.observe { event in order.append("first \(event.index)") }
        f.avenue.observe { event in
            if case .failed = event.change { order.append("second failed \(event.index)") } else { order.append("second \(event.index)") }
        }
        f.avenue.onStateChange = { row in order.append("slot \(row)") }  // replaces the fixture's, keeps its place
        let changes = f.avenue.subscribe()
        f.avenue.prepareItem(for: "a", at: 1)
        f.avenue.prepareItem(for: "b", at: 2)
        await f.work.waitUntilStarted("a")
        await f.work.waitUntilStarted("b")
        f.work.succeed("a", with: 1)
        await order.wait(forCount: 3)
        #expect(order.elements == ["slot 1", "first 1", "second 1"])
        f.work.fail("b", with: TestError("no"))
        await order.wait(forCount: 6)
        #expect(Array(order.elements.suffix(3)) == ["slot 2", "first 2", "second failed 2"])
        #expect(f.errors.elements == [2])  // the fixture's onError is still told
        var read: [Int] = []
        for await event in changes {
            read.append(event.index)
            if read.count == 2 { break }
        }
        #expect(read == [1, 2])
    }

    @Test func aCancelledObserverIsToldNothingMoreAndMayCancelItselfFromInside() async {
        let f = AvenueFixture()
        let told = EventLog<Int>()
        let observation = Shared<ChangeObservation?>(nil)
        observation.withLock { $0 = f.avenue.observe { event in
            told.append(event.index)
            observation.value?.cancel()  // from inside: safe, and it stops here
        } }
        let kept = EventLog<Int>()
        let other = f.avenue.observe { kept.append($0.index) }
        for row in 0..<3 { f.avenue.prepareItem(for: "k\(row)", at: row) }
        for row in 0..<3 {
            await f.work.waitUntilStarted("k\(row)")
            f.work.succeed("k\(row)", with: row)
            await kept.wait(forCount: row + 1)
        }
        #expect(told.elements == [0])
        other.cancel()
        other.cancel()  // twice is fine
        f.avenue.prepareItem(for: "k3", at: 3)
        await f.work.waitUntilStarted("k3")
        f.work.succeed("k3", with: 3)
        await f.told.wait(for: 3)  // the fixture's slot hears it; the cancelled observers do not
        #expect(kept.elements == [0, 1, 2])
        #expect(told.elements == [0])
    }

    @Test func clearingBothSlotsRemovesTheirAdapter() async {
        let f = AvenueFixture()
        f.avenue.onStateChange = nil
        f.avenue.onError = nil
        #expect(f.avenue._state.withLock { $0.listeners.entries.count } == 0)
        let told = EventLog<Int>()
        f.avenue.onError = { _, row in told.append(row) }
        #expect(f.avenue._state.withLock { $0.listeners.entries.count } == 1)
    }

    @Test func aPagedListHasAnyNumberOfObserversBesideItsOwnOnThePageAvenue() async {
        let rows = PagedRows(source: ScriptedSource(count: 1_000), configuration: PagingConfiguration(pageSize: 100))
        let first = EventLog<Range<Int>>(), second = EventLog<Range<Int>>()
        rows.observe { first.append($0.rows) }
        rows.observe { second.append($0.rows) }
        let slot = EventLog<Int>()
        rows.pages.onStateChange = { slot.append($0) }  // the user's slot: paging keeps its own listener
        rows.pages.observe { slot.append($0.index) }
        rows.show(0..<40)
        await first.wait(until: { $0.contains(0..<100) })
        await second.wait(until: { $0.contains(0..<100) })
        await slot.wait(until: { $0.filter { $0 == 0 }.count == 2 })
        #expect(rows.item(at: 39) == 39)
        rows.stop()
    }
}

/// `ListenerList` against a plain model: random adds and removes (twice, unknown ids) keep the
/// listeners in the order they were added, each once.
@Suite("Listener list")
struct ListenerListTests {
    @Test func randomAddsAndRemovesMatchAModel() {
        var random = SplitMix64(seed: 26)
        var list = ListenerList<Int>()
        var model: [(id: UInt64, value: Int)] = []
        for step in 0..<20_000 {
            if model.isEmpty || random.next() % 3 != 0 {
                let id = list.add(step)
                #expect(model.last.map { $0.id < id } ?? true)
                model.append((id, step))
            } else {
                let pick = random.next() % 4 == 0 ? UInt64.max - random.next() % 10 : model[Int(random.next() % UInt64(model.count))].id
                let expected = model.firstIndex { $0.id == pick }.map { model.remove(at: $0).value }
                #expect(list.remove(pick) == expected)
                #expect(list.remove(pick) == nil)  // a second cancel finds nothing
            }
        }
        #expect(list.entries.map(\.id) == model.map(\.id))
        #expect(list.entries.map(\.listener) == model.map(\.value))
    }

    @Test func aHundredThousandObserversComeAndGo() {
        var list = ListenerList<Int>()
        let ids = (0..<100_000).map { list.add($0) }
        for id in ids.reversed() where id % 2 == 0 { list.remove(id) }
        for id in ids where id % 2 == 1 { list.remove(id) }
        #expect(list.entries.isEmpty)
    }
}

/// A handler replaced in a slot is released after the avenue's lock: the deinit of what it captured
/// is user code, which may call back into the avenue (before, it ran inside the lock and deadlocked).
@Suite("Observation slots", .timeLimit(.minutes(5)))
struct ObservationSlotTests {
    final class CallsBackOnDeinit: Sendable {
        let onDeinit: @Sendable () -> Void
        init(_ onDeinit: @escaping @Sendable () -> Void) { self.onDeinit = onDeinit }
        deinit { onDeinit() }
    }

    @Test func replacingAHandlerReleasesTheOldOneOutsideTheLock() {
        let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: ClosureProcessor { $0 })
        let rows = PagedRows(source: ScriptedSource(count: 10))
        let released = EventLog<String>()
        do {
            let capture = CallsBackOnDeinit { [weak avenue] in
                _ = avenue?.onError  // takes the avenue's lock
                released.append("state")
            }
            avenue.onStateChange = { _ in _ = capture }
            let errorCapture = CallsBackOnDeinit { [weak avenue] in
                _ = avenue?.onStateChange
                released.append("error")
            }
            avenue.onError = { _, _ in _ = errorCapture }
            let pageCapture = CallsBackOnDeinit { [weak rows] in
                _ = rows?.onChange
                released.append("pages")
            }
            rows.onChange = { _ in _ = pageCapture }
        }
        avenue.onStateChange = nil
        avenue.onError = { _, _ in }
        rows.onChange = nil
        #expect(released.elements == ["state", "error", "pages"])
    }
}
