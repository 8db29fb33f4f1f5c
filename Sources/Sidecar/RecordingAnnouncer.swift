import Domain
import Logging
import Recorder
import Timeline
import TransportModel

/// Carries one camera's Begin and End announcements from its media thread to its cluster, in order, without the
/// media thread ever waiting for the cluster actor.
///
/// Why a queue with one consumer: a Begin, its End and the withdrawal of a Begin must reach the cluster in the order
/// the connection's ``Timeline/ConnectionRecording`` machine issued them (an End overtaking its Begin would leave the
/// Begin unmatched). Tasks started per message give no such order; one stream drained by one task does.
///
/// Bound: each connection has at most one Begin unanswered and sends one End per Begin, and each zone with a trigger
/// sends at most one ZoneTriggered and one ZoneStopped per activation (an activation lasts at least a second), so the
/// queue holds a few messages per connection and zone at most; it is not a buffer that fills with media.
final class RecordingAnnouncer: Sendable {
    enum Message: Sendable {
        /// Asks the cluster for the session of `request`; `began` runs once it is accepted, before the answer is
        /// posted (the connection's upload and the spool learn of the session before the writer can produce its first
        /// object).
        /// `refused` runs when the cluster refuses it (or the announcement cannot be delivered any more).
        case begin(connection: UInt16, BeginRequest, refused: @Sendable () -> Void, began: @Sendable (SessionNumber) async -> Void)
        case end(connection: UInt16, session: SessionNumber)
        /// The media thread stopped waiting for `request`'s answer: if it was accepted, its End goes out now and
        /// `ended` runs (nothing will be written for it).
        case withdraw(connection: UInt16, BeginRequest, ended: @Sendable (SessionNumber) -> Void)
        /// A zone's ZoneTriggered/ZoneStopped (Zone Management): through the same queue, so a ZoneTriggered is logged
        /// before the Begin the same motion causes.
        case zone(ZoneEvent)
    }

    private let server: PushAVStreamTransportServer
    private let logger: Logger
    private let stream: AsyncStream<Message>
    private let continuation: AsyncStream<Message>.Continuation

    init(server: PushAVStreamTransportServer, logger: Logger) {
        self.server = server
        self.logger = logger
        (stream, continuation) = AsyncStream.makeStream(of: Message.self)
    }

    func send(_ message: Message) {
        if case .terminated = continuation.yield(message) {
            // Only after the recorders stopped and the queue was drained: nothing of the cluster is left to tell.
            logger.error("recording announcement after shutdown was not delivered", metadata: ["message": "\(message)"])
            if case .begin(_, let request, let refused, _) = message {
                refused()
                request.refuse("the camera is shutting down")
            }
        }
    }

    /// Delivers messages until ``finish()``, then returns once the queue is empty.
    func run() async {
        for await message in stream {
            switch message {
            case .begin(let connection, let request, let refused, let began):
                do {
                    let session = try await server.recordingStarted(connectionID: connection, trigger: request.trigger)
                    await began(session)
                    request.accept(session: session)
                } catch {
                    refused()
                    request.refuse("\(error)")
                }
            case .end(let connection, let session):
                await server.recordingEnded(connectionID: connection, sessionNumber: session)
            case .withdraw(let connection, let request, let ended):
                if let session = request.acceptedSession {
                    await server.recordingEnded(connectionID: connection, sessionNumber: session)
                    ended(session)
                }
            case .zone(let event):
                await server.emitZoneEvent(event)
            }
        }
    }

    /// No more messages: ``run()`` returns after delivering those already sent.
    func finish() { continuation.finish() }
}
