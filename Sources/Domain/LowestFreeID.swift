extension ClosedRange where Bound: FixedWidthInteger {
    /// The lowest value of the range that no entry uses yet: how a Matter server assigns the IDs of the entries it
    /// creates (ZoneID, TLSEndpointID, CAID, CCDID), so an ID freed by a removal is handed out again before a higher
    /// one. One rule, one place: the clusters and the TLS store each used to spell the search out.
    public func lowestFree(isUsed: (Bound) -> Bool) -> Bound? {
        first { !isUsed($0) }
    }
}
