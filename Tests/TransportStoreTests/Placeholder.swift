import Testing

@Test func TransportStoreTestsBuilds() { #expect(Bool(true)) }
