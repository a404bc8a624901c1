import Foundation
import Testing
@testable import Avenues
import AvenuesTestSupport

/// The talk's laws, checked by behaviour: two stacks are equal when every read answers the same and
/// every layer ends holding the same entries, for the same seeded sequence of operations.
@Suite("Storage composition")
struct StorageCompositionTests {
    enum Operation {
        case read(Int), write(Int, Int), remove(Int), removeAll
    }

    static func operations(seed: UInt64, count: Int = 3_000) -> [Operation] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { step in
            let key = Int(rng.next() % 24)
            switch rng.next() % 100 {
            case 0..<50: return .read(key)
            case 50..<85: return .write(key, step)
            case 85..<99: return .remove(key)
            default: return .removeAll
            }
        }
    }

    /// Runs the operations, returning every read's answer.
    static func run(_ operations: [Operation], on storage: some Storage<Int, Int>) -> [Int?] {
        operations.compactMap { operation in
            switch operation {
            case .read(let key): return .some(storage.value(for: key))
            case .write(let key, let value): storage.set(value, for: key)
            case .remove(let key): storage.removeValue(for: key)
            case .removeAll: storage.removeAll()
            }
            return nil
        }
    }

    /// Three layers with small limits (so eviction takes part), pre-filled differently.
    static func layers() -> [MemoryStorage<Int, Int>] {
        let limits = [5, 9, 30]
        return limits.enumerated().map { layer, limit in
            let storage = MemoryStorage<Int, Int>(countLimit: limit)
            for key in stride(from: layer, to: 24, by: layer + 2) { storage.set(1_000 * (layer + 1) + key, for: key) }
            return storage
        }
    }

    static func contents(_ storage: MemoryStorage<Int, Int>) -> [Int: Int] {
        Dictionary(uniqueKeysWithValues: storage.keys.compactMap { key in
            storage.value(for: key).map { (key, $0) }
        })
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func layeringIsAssociative(seed: UInt64) {
        let operations = Self.operations(seed: seed)
        let left = Self.layers()
        let right = Self.layers()
        let leftAnswers = Self.run(operations, on: left[0].layered(over: left[1]).layered(over: left[2]))
        let rightAnswers = Self.run(operations, on: right[0].layered(over: right[1].layered(over: right[2])))
        #expect(leftAnswers == rightAnswers)
        for layer in 0..<3 {
            // Each layer saw the same operations in both groupings, so it holds the same entries (and,
            // its eviction state being a function of those operations, would evict the same next).
            #expect(left[layer].keys == right[layer].keys)
            #expect(Self.contents(left[layer]) == Self.contents(right[layer]))
        }
    }

    @Test(arguments: [5, 6] as [UInt64])
    func emptyStorageIsTheIdentityOfLayering(seed: UInt64) {
        let operations = Self.operations(seed: seed)
        let plain = Self.layers()[1]
        let emptyInFront = Self.layers()[1]
        let emptyBehind = Self.layers()[1]
        let expected = Self.run(operations, on: plain)
        #expect(Self.run(operations, on: EmptyStorage<Int, Int>().layered(over: emptyInFront)) == expected)
        #expect(Self.run(operations, on: emptyBehind.layered(over: EmptyStorage())) == expected)
        #expect(emptyInFront.keys == plain.keys)
        #expect(emptyBehind.keys == plain.keys)
    }

    @Test func aMissInFrontReadsTheBackAndCopiesTheValueForward() {
        let front = MemoryStorage<String, Int>()
        let back = MemoryStorage<String, Int>()
        back.set(9, for: "k")
        let layered = front.layered(over: back)
        #expect(layered.value(for: "k") == 9)
        #expect(front.value(for: "k") == 9)
        layered.set(10, for: "j")
        #expect(front.value(for: "j") == 10)
        #expect(back.value(for: "j") == 10)
        layered.removeValue(for: "k")
        #expect(front.value(for: "k") == nil)
        #expect(back.value(for: "k") == nil)
    }

    @Test func mapValuesRoundTripsAndStoresTheInverse() {
        let bytes = MemoryStorage<String, Data>()
        let texts = bytes.mapValues({ String(decoding: $0, as: UTF8.self) }, { Data($0.utf8) })
        texts.set("héllo", for: "greeting")
        #expect(texts.value(for: "greeting") == "héllo")
        #expect(bytes.value(for: "greeting") == Data("héllo".utf8))
        #expect(texts.value(for: "missing") == nil)
    }

    @Test func compactMapValuesReadsUndecodableValuesAsMissesAndRemovesOnFailedEncoding() {
        let strings = MemoryStorage<String, String>()
        let numbers = strings.compactMapValues({ Int($0) }, { $0 >= 0 ? String($0) : nil })
        strings.set("not a number", for: "a")
        #expect(numbers.value(for: "a") == nil)
        numbers.set(5, for: "b")
        #expect(strings.value(for: "b") == "5")
        numbers.set(-1, for: "b")  // cannot be written: the old "5" must not linger
        #expect(strings.value(for: "b") == nil)
    }

    @Test func mapKeysSharesTheBaseStorage() {
        let base = MemoryStorage<String, Int>()
        let byNumber = base.mapKeys { (number: Int) in "#\(number)" }
        byNumber.set(1, for: 7)
        #expect(base.value(for: "#7") == 1)
        #expect(byNumber.value(for: 7) == 1)
        byNumber.removeValue(for: 7)
        #expect(base.value(for: "#7") == nil)
    }
}
