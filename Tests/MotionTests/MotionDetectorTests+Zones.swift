import Domain
import Foundation
import Motion
import Testing

// The detector's motion zones (where motion is reported, per-zone sensitivity, scaling): apart to keep MotionDetectorTests.swift short.

@Suite struct ZoneTests {
    // Zones in 1080p coordinates: A is the left third, B the right third.
    private let zoneA = MotionZone.rectangle(id: 1, x1: 0, y1: 0, x2: 640, y2: 1080)
    private let zoneB = MotionZone.rectangle(id: 2, x1: 1280, y1: 0, x2: 1920, y2: 1080)

    private func run(zones: [MotionZone], sensitivity: Int = 5, object: SceneObject, speed: Double) -> [MotionFrameResult] {
        var scene = SyntheticScene(seed: 41)
        var motion = detector(sensitivity: sensitivity, zones: zones)
        warmedUp(&motion, &scene)
        scene.objects = [object]
        let startX = object.x
        return simulate(&motion, scene: &scene, from: 2, seconds: 2) { time, scene in
            scene.objects[0].x = startX + speed * (time - 2)
        }
    }

    @Test func motionInsideZoneAReportsAOnly() {
        let results = run(zones: [zoneA, zoneB], object: SceneObject(x: 10, y: 30, width: 10, height: 14, level: 230), speed: 10)
        #expect(results.allSatisfy { $0.movedZones == [1] && !$0.movedOutsideZones })
        #expect(results.allSatisfy { $0.zones[1]!.changedFraction > 0 && $0.zones[2]!.lowestSensitivity == nil })
    }

    @Test func motionOutsideEveryZoneReportsOutside() {
        let results = run(zones: [zoneA, zoneB], object: SceneObject(x: 70, y: 30, width: 10, height: 14, level: 230), speed: 5)
        #expect(results.allSatisfy { $0.movedZones.isEmpty && $0.movedOutsideZones && $0.hasMotion })
    }

    @Test func perZoneSensitivity() {
        // The same small, low-contrast object: seen in A (High) and not in B (Low).
        let sensitiveA = MotionZone.rectangle(id: 1, x1: 0, y1: 0, x2: 640, y2: 1080, sensitivity: 10)
        let dullB = MotionZone.rectangle(id: 2, x1: 1280, y1: 0, x2: 1920, y2: 1080, sensitivity: 1)
        let small = SceneObject(x: 20, y: 30, width: 6, height: 6, level: 0)
        let inA = run(zones: [sensitiveA, dullB], object: small, speed: 8)
        #expect(inA.filter { $0.movedZones == [1] }.count >= inA.count - 1)
        var inB = small
        inB.x = 125
        let resultsB = run(zones: [sensitiveA, dullB], object: inB, speed: 8)
        #expect(resultsB.allSatisfy { $0.movedZones.isEmpty })
        #expect(resultsB.contains { $0.zones[2]!.lowestSensitivity != nil }, "B saw it at a higher sensitivity than its own")
    }

    /// Zone Management changes zones while the camera records: the detector rasterises the new ones and keeps its
    /// background, so motion in a zone made mid-stream is located there from the next picture, with no warm-up.
    @Test func replacedZonesApplyFromTheNextPicture() {
        var scene = SyntheticScene(seed: 41)
        var motion = detector(sensitivity: 5, zones: [zoneB])
        warmedUp(&motion, &scene)
        scene.objects = [SceneObject(x: 10, y: 30, width: 10, height: 14, level: 230)]
        let before = simulate(&motion, scene: &scene, from: 2, seconds: 1) { time, scene in scene.objects[0].x = 10 + 10 * (time - 2) }
        #expect(before.allSatisfy { $0.movedZones.isEmpty && $0.zones[1] == nil })
        #expect(before.contains { $0.movedOutsideZones })
        motion.replaceZones([zoneA, zoneB])
        #expect(motion.zonePixelCounts[1] != nil && motion.configuration.zones.map(\.id) == [1, 2])
        let after = simulate(&motion, scene: &scene, from: 3, seconds: 1) { time, scene in scene.objects[0].x = 20 + 10 * (time - 3) }
        #expect(after.first?.movedZones == [1], "the first picture after the change is located in the new zone")
        #expect(after.allSatisfy { $0.movedZones == [1] && !$0.movedOutsideZones })
    }

    @Test func zonesScaleFromSourceCoordinates() {
        // A 640×1080 rectangle is a third of a 1920×1080 frame: the pixel centres of 53 of 160 columns fall inside.
        let triangle = MotionZone(id: 9, polygon: [.init(x: 0, y: 0), .init(x: 1920, y: 0), .init(x: 0, y: 1080)])
        let tiny = MotionZone.rectangle(id: 3, x1: 1000, y1: 500, x2: 1004, y2: 504)
        let motion = detector(zones: [zoneA, triangle, tiny])
        #expect(motion.zonePixelCounts[1] == 53 * 90)
        #expect(abs(motion.zonePixelCounts[9]! - 7200) < 100)
        #expect(motion.zonePixelCounts[3] == 1, "a zone smaller than a pixel keeps one")
    }

    @Test func wholeFrameChangeRecalibrates() {
        var scene = SyntheticScene(seed: 42)
        var motion = detector(zones: [zoneA])
        _ = motion.analyseNow(scene.frame(), at: 0, isKeyframe: true)
        var other = SyntheticScene(seed: 43)
        let result = motion.analyseNow(other.frame(), at: 0.2, isKeyframe: false)
        #expect(result.recalibrated && !result.hasMotion && result.movedZones.isEmpty)
    }

    @Test func analysisSizeKeepsAspect() {
        #expect(MotionDetectorConfiguration.analysisSize(sourceWidth: 1920, sourceHeight: 1080) == (160, 90))
        #expect(MotionDetectorConfiguration.analysisSize(sourceWidth: 640, sourceHeight: 480) == (160, 120))
        #expect(MotionDetectorConfiguration.analysisSize(sourceWidth: 1080, sourceHeight: 1920) == (90, 160))
        #expect(MotionDetectorConfiguration.analysisSize(sourceWidth: 128, sourceHeight: 72) == (128, 72))
    }
}
