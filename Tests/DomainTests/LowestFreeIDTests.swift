import Domain
import Testing

@Suite struct LowestFreeIDTests {
    @Test(arguments: [
        ([], 1),  // nothing used: the range's first
        ([1, 2, 3], 4),  // all below used: the next
        ([1, 3, 4], 2),  // a freed ID comes back before a higher one
        ([2, 3], 1),
        ([1, 2, 3, 4, 5], nil),  // the range is full
    ] as [([UInt16], UInt16?)])
    func theLowestUnusedIDIsHandedOut(used: [UInt16], expected: UInt16?) {
        #expect((UInt16(1)...5).lowestFree(isUsed: used.contains) == expected)
    }
}
