import Testing

@Test func TransportModelTestsBuilds() { #expect(Bool(true)) }
