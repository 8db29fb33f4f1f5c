import Foundation
import Motion
import Testing
import TestSupport

/// The shake estimator recovers a known global shift of a textured picture within a tenth of a pixel, with noise,
/// a brightness change or a moving object in the frame, and says when it cannot tell (no texture) or when the
/// picture moved further than shake does.
@Suite struct GlobalShiftTests {
    static let width = 160, height = 90

    /// A textured scene as a continuous function, so a shifted frame is exact (no resampling in the test).
    static func texture(_ x: Double, _ y: Double) -> Double {
        120 + 35 * sin(0.45 * x + 0.2 * y) + 25 * sin(0.31 * y - 0.17 * x + 1) + 18 * sin(0.9 * x + 0.4) * cos(0.7 * y)
    }

    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var dx: Double
        var dy: Double
        var noise: Double = 0
        var gain: Double = 1
        var offset: Double = 0
        var object = false
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "still", dx: 0, dy: 0),
        Case(name: "half a pixel across", dx: 0.5, dy: 0),
        Case(name: "up by 0.7", dx: 0, dy: -0.7),
        Case(name: "diagonal 1.3, -0.4", dx: 1.3, dy: -0.4),
        Case(name: "2.6, 2.2 (whole-pixel search first)", dx: 2.6, dy: 2.2),
        Case(name: "with sensor noise", dx: -1.4, dy: 0.6, noise: 5),
        Case(name: "with an exposure step", dx: 0.8, dy: -1.1, noise: 3, gain: 1.15, offset: -10),
        Case(name: "with a person-sized object", dx: -0.6, dy: 1.7, noise: 3, object: true),
    ]

    static func frame(_ c: Case, seed: UInt64 = 1) -> [UInt8] {
        var random = SeededGenerator(seed: seed)
        var pixels = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                var level = texture(Double(x) - c.dx, Double(y) - c.dy) * c.gain + c.offset + c.noise * random.gaussian()
                // A 10×24 figure (1.7 % of the picture) that is not part of the scene.
                if c.object, (60..<70).contains(x), (40..<64).contains(y) { level = 30 }
                pixels[y * width + x] = UInt8(max(0, min(255, level.rounded())))
            }
        }
        return pixels
    }

    static var background: [Float] {
        (0..<(width * height)).map { Float(texture(Double($0 % width), Double($0 / width))) }
    }

    @Test(arguments: cases) func aKnownShiftIsRecovered(_ c: Case) {
        var estimator = GlobalShiftEstimator(width: Self.width, height: Self.height)
        let estimate = estimator.estimate(frame: Self.frame(c), background: Self.background)
        #expect(estimate.reliable)
        #expect(!estimate.atLimit)
        #expect(abs(estimate.shift.dx - c.dx) < 0.1 && abs(estimate.shift.dy - c.dy) < 0.1, "\(estimate.shift)")
    }

    /// A light sweeping a still wall drags the least-squares steps a little; no shift explains it, none is used.
    @Test func aLightSweepIsNotAShift() {
        var estimator = GlobalShiftEstimator(width: Self.width, height: Self.height)
        var frame = Self.frame(Case(name: "still", dx: 0, dy: 0, noise: 3))
        for y in 0..<Self.height {
            for x in 0..<Self.width {
                let light = 70 * exp(-(pow(Double(x) - 50, 2) + pow(Double(y) - 30, 2)) / 900)
                frame[y * Self.width + x] = UInt8(min(255, Double(frame[y * Self.width + x]) + light))
            }
        }
        let estimate = estimator.estimate(frame: frame, background: Self.background)
        #expect(estimate.shift == .zero, "\(estimate)")
        // Without the check the steps would have used a shift.
        estimator.explainedFraction = .infinity
        #expect(estimator.estimate(frame: frame, background: Self.background).shift != .zero)
    }

    @Test func aPictureWithoutTextureHasNoShiftToTell() {
        var estimator = GlobalShiftEstimator(width: Self.width, height: Self.height)
        let flat = [UInt8](repeating: 90, count: Self.width * Self.height)
        let estimate = estimator.estimate(frame: flat, background: [Float](repeating: 90, count: flat.count))
        #expect(!estimate.reliable && estimate.shift == .zero)
    }

    @Test func aMoveBeyondShakeIsAtTheLimit() {
        var estimator = GlobalShiftEstimator(width: Self.width, height: Self.height, maxShift: 3)
        let estimate = estimator.estimate(frame: Self.frame(Case(name: "moved", dx: 6, dy: -5)), background: Self.background)
        #expect(estimate.atLimit)
    }

    @Test func alignmentBringsTheFrameBackIntoTheBackgroundsPlace() {
        let c = Case(name: "shifted", dx: 1.25, dy: -0.5)
        var aligned = [UInt8](repeating: 0, count: Self.width * Self.height)
        GlobalShiftEstimator.align(Self.frame(c), width: Self.width, height: Self.height, by: GlobalShift(dx: c.dx, dy: c.dy),
                                   into: &aligned)
        let background = Self.background
        // Away from the rim the shift uncovered, the aligned frame is the background to within resampling.
        var worst = 0.0
        for y in 4..<(Self.height - 4) {
            for x in 4..<(Self.width - 4) {
                worst = max(worst, abs(Double(aligned[y * Self.width + x]) - Double(background[y * Self.width + x])))
            }
        }
        #expect(worst < 8, "largest difference \(worst)")
    }
}
