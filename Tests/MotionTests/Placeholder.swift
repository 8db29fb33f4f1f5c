import Testing

@Test func MotionTestsBuilds() { #expect(Bool(true)) }
