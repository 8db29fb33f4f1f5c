import Testing

@Test func RecorderTestsBuilds() { #expect(Bool(true)) }
