import Domain

/// Rasterising is the detector's business: the zone itself (in `Domain`) is only its polygon and settings.
extension MotionZone {
    /// The analysis pixels whose centres fall inside the polygon scaled from `source` to `analysis` size.
    /// A zone smaller than one analysis pixel still gets the pixel under its centroid, so it can never go blind.
    func rasterised(sourceWidth: Int, sourceHeight: Int, analysisWidth: Int, analysisHeight: Int) -> [Int] {
        guard polygon.count >= 3 else { return [] }
        let scaleX = Double(analysisWidth) / Double(sourceWidth)
        let scaleY = Double(analysisHeight) / Double(sourceHeight)
        let vertices = polygon.map { ZonePoint(x: $0.x * scaleX, y: $0.y * scaleY) }
        var inside: [Int] = []
        for y in 0..<analysisHeight {
            let py = Double(y) + 0.5
            // Even-odd rule along this row: the x positions where edges cross it, sorted.
            var crossings: [Double] = []
            for i in vertices.indices {
                let a = vertices[i]
                let b = vertices[(i + 1) % vertices.count]
                if (a.y <= py) != (b.y <= py) {
                    crossings.append(a.x + (py - a.y) * (b.x - a.x) / (b.y - a.y))
                }
            }
            crossings.sort()
            var pair = 0
            while pair + 1 < crossings.count {
                // Pixel centres x + 0.5 inside [left, right).
                let first = Swift.max(0, Int((crossings[pair] - 0.5).rounded(.up)))
                let last = Swift.min(analysisWidth - 1, Int((crossings[pair + 1] - 0.5).rounded(.up)) - 1)
                if first <= last { inside += (first...last).map { y * analysisWidth + $0 } }
                pair += 2
            }
        }
        if inside.isEmpty {
            let cx = vertices.map(\.x).reduce(0, +) / Double(vertices.count)
            let cy = vertices.map(\.y).reduce(0, +) / Double(vertices.count)
            let x = Swift.min(Swift.max(Int(cx), 0), analysisWidth - 1)
            let y = Swift.min(Swift.max(Int(cy), 0), analysisHeight - 1)
            inside = [y * analysisWidth + x]
        }
        return inside
    }
}
