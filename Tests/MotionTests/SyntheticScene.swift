import Domain
import Foundation
import Motion
import TestSupport

/// A rectangle drawn over the scene at a given luma.
struct SceneObject {
    var x: Double
    var y: Double
    var width: Int
    var height: Int
    var level: Double
}

/// A camera view at analysis resolution: a textured static background (levels 40…190 in gradients and blocks, so
/// that dark and bright areas both exist), objects, a global gain/offset (lamp, exposure) and temporal sensor noise.
struct SyntheticScene {
    let width: Int
    let height: Int
    var base: [Double]
    var noiseSigma: Double
    var gain = 1.0
    var offset = 0.0
    var objects: [SceneObject] = []
    /// The camera's displacement: the frame shows the scene moved by this many pixels (bilinear, edges repeated).
    var shake: (dx: Double, dy: Double) = (0, 0)
    var rng: SeededGenerator

    init(width: Int = 160, height: Int = 90, noiseSigma: Double = 6, seed: UInt64 = 1) {
        self.width = width
        self.height = height
        self.noiseSigma = noiseSigma
        rng = SeededGenerator(seed: seed)
        var texture = SeededGenerator(seed: seed &+ 0x5EED)
        base = []
        base.reserveCapacity(width * height)
        // Blocks of 1/16 of the width with random levels over a diagonal gradient: a room with furniture.
        let block = max(2, width / 16)
        var blockLevels: [Double] = []
        let blocksAcross = width / block + 1, blocksDown = height / block + 1
        for _ in 0..<(blocksAcross * blocksDown) { blockLevels.append(Double(texture.next() % 90)) }
        for y in 0..<height {
            for x in 0..<width {
                let gradient = 40 + 60 * Double(x + y) / Double(width + height)
                base.append(gradient + blockLevels[(y / block) * blocksAcross + x / block])
            }
        }
    }

    /// The next frame: base × gain + offset, objects on top, then noise; `pulse` adds the keyframe quality pulse
    /// (a slight brightness and contrast change with a little extra noise).
    mutating func frame(pulse: Bool = false) -> LumaPlane {
        var pixels = [UInt8](repeating: 0, count: width * height)
        var levels = (shake.dx == 0 && shake.dy == 0 ? base : shaken()).map { $0 * gain + offset }
        for object in objects {
            let x0 = Int(object.x.rounded(.down)), y0 = Int(object.y.rounded(.down))
            let columns = max(0, x0)..<max(max(0, x0), min(width, x0 + object.width))
            guard !columns.isEmpty else { continue }  // moved out of the picture
            for y in max(0, y0)..<max(max(0, y0), min(height, y0 + object.height)) {
                for x in columns { levels[y * width + x] = object.level * gain + offset }
            }
        }
        for i in levels.indices {
            var value = levels[i] + noiseSigma * rng.gaussian()
            if pulse { value = (value - 128) * 1.04 + 128 + 5 + 2 * rng.gaussian() }
            pixels[i] = UInt8(min(max(value.rounded(), 0), 255))
        }
        return LumaPlane(width: width, height: height, pixels: pixels)
    }
}

extension SyntheticScene {
    /// The scene displaced by `shake`: level(x, y) = base(x − dx, y − dy).
    func shaken() -> [Double] {
        let level = { (x: Int, y: Int) in base[min(max(y, 0), height - 1) * width + min(max(x, 0), width - 1)] }
        var out = [Double](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let sx = Double(x) - shake.dx, sy = Double(y) - shake.dy
                let x0 = Int(sx.rounded(.down)), y0 = Int(sy.rounded(.down))
                let ax = sx - Double(x0), ay = sy - Double(y0)
                let top = level(x0, y0) * (1 - ax) + level(x0 + 1, y0) * ax
                let bottom = level(x0, y0 + 1) * (1 - ax) + level(x0 + 1, y0 + 1) * ax
                out[y * width + x] = top * (1 - ay) + bottom * ay
            }
        }
        return out
    }
}

/// Runs a detector over `seconds` of frames at `fps`, calling `change` before each frame; returns every result.
func simulate(
    _ detector: inout MotionDetector, scene: inout SyntheticScene, from start: Double = 0, seconds: Double, fps: Double = 30,
    keyframeEvery: Double = 2, change: (Double, inout SyntheticScene) -> Void = { _, _ in }
) -> [MotionFrameResult] {
    var results: [MotionFrameResult] = []
    let frames = Int((seconds * fps).rounded())
    let firstFrame = Int((start * fps).rounded())
    let framesPerKeyframe = Int((keyframeEvery * fps).rounded())
    for n in firstFrame..<(firstFrame + frames) {
        let time = Double(n) / fps
        change(time, &scene)
        guard detector.wantsFrame(at: time) else { continue }
        let isKeyframe = n % framesPerKeyframe == 0
        let plane = scene.frame(pulse: isKeyframe)
        if let result = detector.analyse(plane, at: time, isKeyframe: isKeyframe) { results.append(result) }
    }
    return results
}

func detector(sensitivity: Int = 5, zones: [MotionZone] = [], width: Int = 160, height: Int = 90, source: (Int, Int) = (1920, 1080))
    -> MotionDetector
{
    MotionDetector(configuration: MotionDetectorConfiguration(
        sourceWidth: source.0, sourceHeight: source.1, analysisWidth: width, analysisHeight: height,
        sensitivity: sensitivity, zones: zones))
}
