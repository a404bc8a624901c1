import Testing
@testable import Avenues
import AvenuesTestSupport

@Suite("MemoryStorage")
struct MemoryStorageTests {
    @Test func storesReadsReplacesAndRemoves() {
        let storage = MemoryStorage<String, Int>()
        #expect(storage.value(for: "a") == nil)
        storage.set(1, for: "a")
        storage.set(2, for: "b")
        #expect(storage.value(for: "a") == 1)
        storage.set(3, for: "a")
        #expect(storage.value(for: "a") == 3)
        #expect(storage.count == 2)
        storage.removeValue(for: "a")
        #expect(storage.value(for: "a") == nil)
        storage.removeAll()
        #expect(storage.count == 0)
        #expect(storage.value(for: "b") == nil)
    }

    @Test func theCountLimitEvictsEntriesNotUsedFirst() {
        let storage = MemoryStorage<Int, Int>(countLimit: 3)
        for key in 1...3 { storage.set(key, for: key) }
        _ = storage.value(for: 1)  // used: 1 gets a second chance
        storage.set(4, for: 4)     // over the limit: the hand passes 1 and takes 2
        #expect(storage.value(for: 2) == nil)
        #expect(storage.count == 3)
        #expect(Set(storage.keys) == [1, 3, 4])
        _ = storage.value(for: 4)
        storage.set(5, for: 5)     // 1 lost its bit when the hand passed; 3 was never used
        #expect(Set(storage.keys) == [1, 4, 5] || Set(storage.keys) == [3, 4, 5])
        #expect(storage.value(for: 4) == 4)
    }

    @Test func aRowReadEveryFrameSurvivesAStreamOfWritesNobodyReads() {
        // The render loop's case: visible rows are read all the time while loads write new rows.
        let storage = MemoryStorage<Int, Int>(countLimit: 50)
        for key in 0..<10 { storage.set(key, for: key) }
        for step in 100..<10_000 {
            for visible in 0..<10 { #expect(storage.value(for: visible) == visible) }
            storage.set(step, for: step)
        }
        #expect(storage.count == 50)
    }
    @Test func aValueJustStoredIsKeptWhenEveryOtherEntryWasRead() {
        // The ordered stream's hang: every row printed so far had been read, so the sweep cleared
        // their bits and took the value just stored, before anyone could read it.
        let storage = MemoryStorage<Int, Int>(countLimit: 3)
        for key in 1...3 { storage.set(key, for: key) }
        for key in 1...3 { _ = storage.value(for: key) }
        storage.set(4, for: 4)
        #expect(storage.value(for: 4) == 4)
        #expect(storage.count == 3)
    }

    @Test func aBurstOfWritesNobodyReadsKeepsTheNewestWritesNotOnlyTheLastOne() {
        // Rows prefetched ahead are written and read later; each write must not evict the one before.
        let storage = MemoryStorage<Int, Int>(countLimit: 100)
        for key in 0..<300 { storage.set(key, for: key) }
        let newest = (250..<300).filter { storage.value(for: $0) == nil }
        #expect(newest.isEmpty, "the newest writes were evicted: \(newest)")
        #expect(storage.count == 100)
    }

    @Test func theCostLimitEvictsUntilTheTotalFits() {
        let storage = MemoryStorage<String, [UInt8]>(costLimit: 10, cost: { $0.count })
        storage.set([UInt8](repeating: 0, count: 4), for: "a")
        storage.set([UInt8](repeating: 0, count: 4), for: "b")
        #expect(storage.totalCost == 8)
        storage.set([UInt8](repeating: 0, count: 5), for: "c")  // 13 > 10: "a" goes
        #expect(storage.value(for: "a") == nil)
        #expect(storage.totalCost == 9)
        storage.set([UInt8](repeating: 0, count: 1), for: "b")  // a replacement changes the total
        #expect(storage.totalCost == 6)
    }

    @Test func aValueCostingMoreThanTheWholeLimitIsNotKeptAndDropsTheOldValue() {
        let storage = MemoryStorage<String, [UInt8]>(costLimit: 10, cost: { $0.count })
        storage.set([1], for: "big")
        storage.set([UInt8](repeating: 0, count: 11), for: "big")
        #expect(storage.value(for: "big") == nil)
        #expect(storage.totalCost == 0)
    }

    @Test func aZeroCountLimitKeepsNothing() {
        let storage = MemoryStorage<Int, Int>(countLimit: 0)
        storage.set(1, for: 1)
        #expect(storage.value(for: 1) == nil)
    }

    @Test func theClockTableKeepsItsSlotsConsistentUnderRandomOperations() {
        var rng = SplitMix64(seed: 11)
        var table = ClockTable<Int, Int>()
        var lastWritten: [Int: Int] = [:]
        for step in 0..<20_000 {
            let key = Int(rng.next() % 64)
            switch rng.next() % 5 {
            case 0, 1:
                table.set(step, for: key, cost: 2)
                lastWritten[key] = step
            case 2:
                if let value = table.value(for: key) { #expect(value == lastWritten[key]) }
            case 3:
                _ = table.removeValue(for: key)
            default:
                if let evicted = table.evict() { #expect(evicted.value == lastWritten[evicted.key]) }
            }
            if step.isMultiple(of: 101) {
                #expect(Set(table.keys).count == table.count)
                #expect(table.totalCost == 2 * table.count)
                for key in table.keys { #expect(table.peek(key) == lastWritten[key]) }
            }
        }
    }

    @Test func concurrentUseFromEightTasksKeepsTheLimit() async {
        let storage = MemoryStorage<Int, Int>(countLimit: 100)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var rng = SplitMix64(seed: UInt64(task))
                    for _ in 0..<5_000 {
                        let key = Int(rng.next() % 300)
                        if rng.next() % 2 == 0 {
                            storage.set(key * 10, for: key)
                        } else if let value = storage.value(for: key) {
                            #expect(value == key * 10)
                        }
                    }
                }
            }
        }
        #expect(storage.count <= 100)
    }
}
