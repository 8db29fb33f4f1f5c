import NIOCore
import Synchronization

/// A segment still being muxed: its chunks so far, and at most one request body that receives the rest as they
/// are cut. Lets a PUT start with the first chunk instead of waiting for the whole segment.
final class LiveSegment: Sendable {
    let object: UploadObject
    private let state = Mutex(State())

    private struct State {
        var chunks: [ByteBuffer] = []
        var finished = false
        var streamed = false
        var continuation: AsyncThrowingStream<ByteBuffer, any Error>.Continuation?
    }

    init(object: UploadObject) {
        self.object = object
    }

    func append(_ bytes: [UInt8]) {
        let buffer = ByteBuffer(bytes: bytes)
        state.withLock { state in
            state.chunks.append(buffer)
            state.continuation?.yield(buffer)
        }
    }

    func finish() {
        state.withLock { state in
            state.finished = true
            state.continuation?.finish()
            state.continuation = nil
        }
    }

    /// The segment will never be completed (the recording stopped mid-segment): a body being streamed fails, so
    /// the request is aborted instead of ending as a truncated but well-formed upload.
    func abandon() {
        state.withLock { state in
            state.finished = true
            state.continuation?.finish(throwing: Abandoned(object: object))
            state.continuation = nil
        }
    }

    struct Abandoned: Error {
        var object: UploadObject
    }

    /// Whether a body was already handed out (a live segment is streamed at most once; retries use the spool).
    var wasStreamed: Bool { state.withLock { $0.streamed } }

    /// The chunks so far, then each new one, ending when the segment is finished.
    func makeBody() -> AsyncThrowingStream<ByteBuffer, any Error> {
        AsyncThrowingStream(bufferingPolicy: .unbounded) { continuation in
            state.withLock { state in
                state.streamed = true
                for chunk in state.chunks { continuation.yield(chunk) }
                if state.finished {
                    continuation.finish()
                } else {
                    state.continuation = continuation
                }
            }
        }
    }
}
