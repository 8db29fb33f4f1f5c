import CLumaKernels

// The outline steps of `analyseNow` (see `MotionDetector`, step 5 and the persistence of step 6): which changed
// pixels have an outline near them that a light does not explain.
extension MotionDetector {
    /// Fills `edgeNear` with the strongest end of the change within `edgeSupportRadius` of each pixel: how far the
    /// opened residual falls across a pixel, where it falls to less than a third and a light does not explain the fall
    /// (0 elsewhere); `strictEdgeNear` likewise with ``strictOutlineMargin`` more tolerance. A changed pixel then counts
    /// only as far as an edge near it is strong: a person, a car, an animal has an outline where the change drops to
    /// nothing; the change a headlight sweep or an insect out of focus at the lens makes fades smoothly.
    ///
    /// Why the light test: on a textured scene a smooth light still makes a change with sharp ends, wherever the
    /// texture has them — a lamp brightens a dark stone more than the white one beside it (`frame = (1 − a) ·
    /// background + a · lamp`), a gain the white one more. Across two neighbours the frame's contrast is then the
    /// background's times a positive gain (`lightGains`), give or take the noise (`tolerance`); an object's outline
    /// brings contrast the scene did not have, most of all where it crosses a plain part of it. The same holds against
    /// the short-term reference picture, whose ends the change also has (where something moved within `motionWindow`):
    /// a light explains an end only if it explains it against both (a slow mover's trail keeps its ends). The strict
    /// outlines are judged against the background alone: a slow light drift between the reference and now makes
    /// faint ends of that kind too, and faint ends are what the higher sensitivities must not take for an outline. On
    /// the generalisation corpus's tuning seeds this took Medium's false triggers from 51 an hour (headlights and
    /// insects) to none, every crossing kept.
    mutating func findEdges(_ pixels: [UInt8], reference: [UInt8]?, gain: Double, offset: Double, tolerance: Double) {
        let g = Float(gain), o = Float(offset)
        background.withUnsafeBufferPointer { model in
            predictedBackground.withUnsafeMutableBufferPointer { out in
                for i in 0..<model.count { out[i] = Self.truncatedLevel(Swift.min(Swift.max(model[i] * g + o + 0.5, 0), 255)) }
            }
        }
        let w = Int32(width), h = Int32(height), r = Int32(configuration.edgeSupportRadius)
        let gains = configuration.lightGains, strictTolerance = Float(tolerance + strictOutlineMargin)
        let reference = reference ?? predictedBackground
        opened.withUnsafeBufferPointer { o in
            pixels.withUnsafeBufferPointer { f in
                predictedBackground.withUnsafeBufferPointer { m in
                    reference.withUnsafeBufferPointer { p in
                        edgeScratch.withUnsafeMutableBufferPointer { e in
                            strictEdgeScratch.withUnsafeMutableBufferPointer { s in
                                pushav_motion_edge_strength(
                                    o.baseAddress!, f.baseAddress!, m.baseAddress!, p.baseAddress!, Float(tolerance),
                                    strictTolerance, Float(gains.lowerBound), Float(gains.upperBound),
                                    w, h, e.baseAddress!, s.baseAddress!)
                            }
                        }
                    }
                }
            }
        }
        edgeScratch.withUnsafeBufferPointer { e in
            dilationRows.withUnsafeMutableBufferPointer { rows in
                edgeNear.withUnsafeMutableBufferPointer { n in
                    pushav_motion_dilate(e.baseAddress!, w, h, r, rows.baseAddress!, n.baseAddress!)
                }
            }
        }
        strictEdgeScratch.withUnsafeBufferPointer { e in
            dilationRows.withUnsafeMutableBufferPointer { rows in
                strictEdgeNear.withUnsafeMutableBufferPointer { n in
                    pushav_motion_dilate(e.baseAddress!, w, h, r, rows.baseAddress!, n.baseAddress!)
                }
            }
        }
    }

    /// How much clearer than a light's (levels, beyond the noise tolerance) an outline must be to count as persistent
    /// (``MotionSensitivity/persistentOutline(_:)``, Medium and above): the pixel change Medium itself needs.
    ///
    /// Why: near such an outline a few faint pixels count, and a compressed stream makes faint outlines out of
    /// nothing — a smooth light or a blurred insect breaks into codec blocks (8 pixels of a 480-pixel-wide substream are more than
    /// two analysis pixels), whose edges are new contrast the scene did not have. Those steps are a fraction of the
    /// change, a few levels to a dozen; an object's outline is as strong as the object. So the higher sensitivities
    /// count faint change, but only near an outline that Medium would call a change, seen in two pictures in a row
    /// (``selectPersistentPixels()``). On the tuning seeds: High's false triggers 96 an hour → 0.
    var strictOutlineMargin: Double {
        Double(MotionSensitivity.level(MotionSensitivity.medium).pixelDelta)
    }

    /// `persistentCounted` = `counted` capped by `strictEdgeNear` and by the previous picture's `strictEdgeNear`; then
    /// this picture's becomes the previous one. Returns `persistentCounted`.
    ///
    /// Why two pictures: codec block edges come and go as the encoder re-quantises each picture; an object's outline
    /// is still near where it was one analysed picture before (within twice `edgeSupportRadius`). It costs the higher
    /// sensitivities one analysed picture of latency (0.1–0.2 s) on what Medium does not see; what Medium and below
    /// see needs no second picture, so the higher levels lose nothing (see
    /// ``regionMotion(counts:persistentCounts:region:)``).
    mutating func selectPersistentPixels() -> [UInt8] {
        counted.withUnsafeBufferPointer { c in
            strictEdgeNear.withUnsafeBufferPointer { n in
                previousEdgeNear.withUnsafeBufferPointer { p in
                    persistentCounted.withUnsafeMutableBufferPointer { out in
                        pushav_motion_persistent(c.baseAddress!, n.baseAddress!, p.baseAddress!, Int32(c.count), out.baseAddress!)
                    }
                }
            }
        }
        swap(&previousEdgeNear, &strictEdgeNear)
        return persistentCounted
    }

    /// No outline is known from before (a new background, a new stream): the next picture's higher levels wait for
    /// one more.
    mutating func forgetOutlines() {
        previousEdgeNear.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
    }

    /// `counted` = the opened residual, capped by the strongest edge near the pixel, where it exceeds
    /// `activityFactor` × the pixel's usual flicker (its activity); else 0.
    mutating func selectCountedPixels() {
        let factor = Float(configuration.activityFactor)
        opened.withUnsafeBufferPointer { o in
            edgeNear.withUnsafeBufferPointer { n in
                activity.withUnsafeBufferPointer { a in
                    counted.withUnsafeMutableBufferPointer { c in
                        pushav_motion_select(o.baseAddress!, n.baseAddress!, a.baseAddress!, factor, Int32(o.count), c.baseAddress!)
                    }
                }
            }
        }
    }
}
