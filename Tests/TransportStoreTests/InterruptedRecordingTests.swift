import Foundation
import Testing
import TestSupport
import TransportModel
import TransportStore

/// A recording whose process died between its Begin and its End (kill -9, power loss): the store remembers it, and
/// the next start sends the End it is owed — once, logged after every earlier event, to the connection's fabric.
@Suite("Recordings interrupted by a crash")
struct InterruptedRecordingTests {
    private func server(_ store: TransportStore) throws -> PushAVStreamTransportServer {
        try PushAVStreamTransportServer(capabilities: TransportCapabilities(maxZones: 3), persistence: store,
                                        clock: ManualClock(), eventLog: store)
    }

    /// How the previous process left its recordings, and what the next start owes.
    enum Ending: String, CaseIterable, CustomTestStringConvertible {
        /// kill -9 while recording: the End is owed.
        case killedWhileRecording
        /// The recorder ended it before the stop: nothing is owed.
        case endedByTheRecorder
        /// Inactive, then the recorder ended it: nothing is owed.
        case endedAfterInactive
        /// Deallocated while recording, then the recorder ended it: nothing is owed.
        case endedAfterDeallocate
        /// Deallocated while recording, and killed before the recorder's End: owed, although the connection is gone.
        case killedAfterDeallocate
        /// The recorder ended it and the End was logged, but the store's record of the End failed (an I/O error),
        /// then kill -9: nothing is owed, and no second End goes out.
        case endLoggedButItsRecordFailed
        var testDescription: String { rawValue }
    }

    @Test(arguments: Ending.allCases)
    func theNextStartSendsExactlyTheOwedEnds(_ ending: Ending) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("t.sqlite").path
            var store = try TransportStore(path: path)
            var server = try server(store)
            try await server.setRegistries(testRegistries)
            let id = try await server.allocatePushTransport(continuousOptions(expiryTime: nil), fabric: fabric2).connectionID
            try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric2)
            let session = try await server.recordingStarted(connectionID: id, trigger: .continuous)
            switch ending {
            case .killedWhileRecording: break
            case .endedByTheRecorder: #expect(await server.recordingEnded(connectionID: id, sessionNumber: session))
            case .endedAfterInactive:
                try await server.setTransportStatus(connectionID: id, transportStatus: .inactive, fabric: fabric2)
                #expect(await server.recordingEnded(connectionID: id, sessionNumber: session))
            case .endedAfterDeallocate:
                try await server.deallocatePushTransport(connectionID: id, fabric: fabric2)
                #expect(await server.recordingEnded(connectionID: id, sessionNumber: session))
            case .killedAfterDeallocate:
                try await server.deallocatePushTransport(connectionID: id, fabric: fabric2)
            case .endLoggedButItsRecordFailed:
                #expect(await server.recordingEnded(connectionID: id, sessionNumber: session))
                // What the failed write left: the recording still recorded as open.
                try store.save(openRecording: OpenRecording(sessionNumber: session, containerType: .cmaf, fabricIndex: fabric2),
                               connectionID: id)
            }
            let before = try await server.loggedEvents(after: 0, fabric: nil, limit: 100)
            try store.close()  // the process is gone: nothing else of it runs

            store = try TransportStore(path: path)
            server = try self.server(store)
            let owed = await server.endRecordingsInterruptedByTheLastStop()
            let after = try await server.loggedEvents(after: before.last?.number ?? 0, fabric: nil, limit: 100)
            if ending == .killedWhileRecording || ending == .killedAfterDeallocate {
                #expect(owed[id]?.sessionNumber == session)
                #expect(after.count == 1)
                guard case .pushTransportEnd(let end) = after.first?.event else {
                    Issue.record("no End logged: \(after)")
                    return
                }
                #expect(end.connectionID == id && end.cmafSessionNumber == session)
                #expect(after[0].fabricIndex == fabric2 && after[0].number > before.last!.number)
            } else {
                #expect(owed.isEmpty && after.isEmpty, "\(owed) \(after)")
            }
            // Owed once: a second call, and a third start, owe nothing more.
            #expect(await server.endRecordingsInterruptedByTheLastStop().isEmpty)
            try store.close()
            store = try TransportStore(path: path)
            #expect(await (try self.server(store)).endRecordingsInterruptedByTheLastStop().isEmpty)
            try store.close()
        }
    }
}
