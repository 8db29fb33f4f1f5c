import Testing

@Test func MediaIOTestsBuilds() { #expect(Bool(true)) }
