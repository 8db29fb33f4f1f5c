// Step 6 of `analyseNow` (see `MotionDetector`): the counted pixels per region and level, and the lowest sensitivity
// at which each region moved.
extension MotionDetector {
    /// Changed pixels per region and level: counts[region × 11 + level], level 1…10 the lowest sensitivity at
    /// which the pixel counts as changed.
    func countChanges(_ counted: [UInt8], _ levelOf: [UInt8]) -> [Int] {
        var counts = [Int](repeating: 0, count: regionAreas.count * 11)
        counted.withUnsafeBufferPointer { o in
            zoneMasks.withUnsafeBufferPointer { masks in
                levelOf.withUnsafeBufferPointer { levels in
                    counts.withUnsafeMutableBufferPointer { counts in
                        for i in 0..<o.count {
                            let level = Int(levels[Int(o[i])])
                            guard level > 0 else { continue }
                            counts[level] &+= 1
                            var mask = masks[i]
                            if mask == 0 {
                                counts[11 + level] &+= 1
                                continue
                            }
                            while mask != 0 {
                                counts[(2 + mask.trailingZeroBitCount) * 11 + level] &+= 1
                                mask &= mask - 1
                            }
                        }
                    }
                }
            }
        }
        return counts
    }

    /// The lowest sensitivity at which a region's changed pixels reach its area threshold, or — from Medium up — its
    /// pixels near a persistent outline (``selectPersistentPixels()``) reach ``MotionSensitivity/persistentOutline(_:)``'s.
    /// Below Medium only the first counts; above it only the second (faint change is believed only near such an
    /// outline). Each level's thresholds are at most the level below's, so every level sees whatever a lower one sees.
    ///
    /// The threshold is a fraction of the frame (so an object of a given size counts the same in any zone), but at
    /// most half of the region (so a small zone can still move) and at least `minimumChangedPixels`.
    func regionMotion(counts: [Int], persistentCounts: [Int], region: Int) -> RegionMotion {
        let area = regionAreas[region]
        guard area > 0 else { return .still }
        let frameArea = Double(regionAreas[0])
        func required(_ fraction: Double) -> Double {
            Swift.max(Double(Swift.min(configuration.minimumChangedPixels, area)), Swift.min(fraction * frameArea, 0.5 * Double(area)))
        }
        // Counts are per level of change (the lowest level whose Δ a pixel's change reaches): summed up to a level,
        // they are the pixels whose change reaches that level's Δ.
        var changed = 0, lowest: Int?
        for level in 1...10 {
            changed += counts[region * 11 + level]
            guard lowest == nil else { continue }
            if level <= MotionSensitivity.medium && Double(changed) >= required(MotionSensitivity.table[level - 1].minimumAreaFraction) {
                lowest = level
            } else if let outline = MotionSensitivity.persistentOutline(level) {
                var persisted = 0
                for bucket in MotionSensitivity.table.indices where MotionSensitivity.table[bucket].pixelDelta >= outline.pixelDelta {
                    persisted += persistentCounts[region * 11 + bucket + 1]
                }
                if Double(persisted) >= required(outline.minimumAreaFraction) {
                    lowest = level
                }
            }
        }
        return RegionMotion(lowestSensitivity: lowest, changedFraction: Double(changed) / Double(area))
    }
}
