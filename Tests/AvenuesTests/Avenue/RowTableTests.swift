import Testing
@testable import Avenues
import AvenuesTestSupport

@Suite("RowTable")
struct RowTableTests {
    @Test func intRowsAreKeptInPagesAndOtherIndicesInTheDictionary() {
        var table = RowTable<Int, String>()
        table[0] = "a"
        table[513] = "b"
        table[-1] = "negative"
        table[RowTable<Int, String>.pagedLimit + 5] = "far"
        #expect(table[0] == "a" && table[513] == "b" && table[-1] == "negative")
        #expect(table[RowTable<Int, String>.pagedLimit + 5] == "far")
        #expect(table[1] == nil && table[1_000_000] == nil)
        #expect(table.count == 4)
        #expect(table.pagesInUse == 2)
        #expect(table.others.count == 2)
    }

    @Test func aPageIsFreedWhenItsLastRowGoes() {
        var table = RowTable<Int, Int>()
        for row in 1_024..<1_124 { table[row] = row }  // all in page 2 (rows 1024...1535)
        #expect(table.pagesInUse == 1)
        for row in 1_024..<1_123 { table[row] = nil }
        #expect(table.pagesInUse == 1)
        table[1_123] = nil
        #expect(table.pagesInUse == 0)
        #expect(table.pages[2].isEmpty)
        #expect(table.count == 0)
        table[5] = nil  // removing what is not there changes nothing
        #expect(table.count == 0 && table.pages.count == 3)
    }

    @Test func nonIntIndicesUseTheDictionary() {
        var table = RowTable<String, Int>()
        table["row"] = 1
        table["row"] = 2
        #expect(table["row"] == 2 && table.count == 1 && table.pages.isEmpty)
        table["row"] = nil
        #expect(table.count == 0)
    }

    @Test func theTableMatchesADictionaryUnderRandomOperations() {
        var rng = SplitMix64(seed: 3)
        var table = RowTable<Int, Int>()
        var model: [Int: Int] = [:]
        for step in 0..<50_000 {
            let row = Int(rng.next() % 3_000) - 100
            if rng.next() % 3 == 0 {
                table[row] = nil
                model[row] = nil
            } else {
                table[row] = step
                model[row] = step
            }
        }
        #expect(table.count == model.count)
        for row in -100..<2_900 { #expect(table[row] == model[row]) }
    }
}
