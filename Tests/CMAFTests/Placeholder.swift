import Testing

@Test func CMAFTestsBuilds() { #expect(Bool(true)) }
