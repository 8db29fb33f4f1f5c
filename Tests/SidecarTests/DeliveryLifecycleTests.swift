import Delivery
import Domain
import Sidecar
import Testing
import TestSupport

/// ``DeliveryLifecycle``: when a destination's events may end. Tables of inputs and the actions they must produce,
/// then a seeded property test that interleaves a recorder's sessions with a Modify the way the media thread and the
/// cluster can.
@Suite struct DeliveryLifecycleTests {
    typealias Input = DeliveryLifecycle.Input
    typealias Action = DeliveryLifecycle.Action
    static func t(_ n: Int) -> DeliveryLifecycle.Ticket { .init(n) }

    /// (what happens, the inputs in order, the actions of each input)
    static let cases: [(String, [Input], [[Action]])] = [
        ("closing with nothing owed and the recorder caught up ends at once",
         [.closed(recorderCaughtUp: true)], [[.startWriteLimit, .endEvents]]),
        ("closing before the recorder caught up waits for it",
         [.closed(recorderCaughtUp: false), .recorderCaughtUp], [[.startWriteLimit], [.endEvents]]),
        // Issue 47's loss: the Begin was asked, the Modify closed the destination before the cluster answered.
        ("a Begin in flight at close holds the events until its session is written",
         [.beginAsked(t(1)), .closed(recorderCaughtUp: true), .beginAccepted(t(1), 1), .sessionWritten(1)],
         [[], [.startWriteLimit], [], [.endEvents]]),
        ("a Begin refused after close releases the events",
         [.beginAsked(t(1)), .closed(recorderCaughtUp: true), .beginRefused(t(1))],
         [[], [.startWriteLimit], [.endEvents]]),
        // Between the Modify and the media thread's next packet the old recording can still ask.
        ("a Begin asked after close but before the recorder caught up is owed",
         [.closed(recorderCaughtUp: false), .beginAsked(t(1)), .recorderCaughtUp, .beginAccepted(t(1), 4), .sessionWritten(4)],
         [[.startWriteLimit], [], [], [], [.endEvents]]),
        ("sessions written while open end nothing",
         [.beginAsked(t(1)), .beginAccepted(t(1), 1), .sessionWritten(1)], [[], [], []]),
        ("two sessions owed: the events end after the second",
         [.beginAsked(t(1)), .beginAccepted(t(1), 1), .beginAsked(t(2)), .beginAccepted(t(2), 2),
          .closed(recorderCaughtUp: true), .sessionWritten(2), .sessionWritten(1)],
         [[], [], [], [], [.startWriteLimit], [], [.endEvents]]),
        ("a session written twice (withdrawn and finished) counts once",
         [.beginAsked(t(1)), .beginAccepted(t(1), 1), .closed(recorderCaughtUp: true), .sessionWritten(1), .sessionWritten(1)],
         [[], [], [.startWriteLimit], [.endEvents], []]),
        ("the write limit ends the events, naming what was owed",
         [.beginAsked(t(1)), .beginAsked(t(2)), .beginAccepted(t(2), 7), .closed(recorderCaughtUp: false), .writeLimitExpired],
         [[], [], [], [.startWriteLimit],
          [.warnStillOwed(asked: [t(1)], writing: [7], recorderCaughtUp: false), .endEvents]]),
        ("the write limit after the events ended does nothing",
         [.closed(recorderCaughtUp: true), .writeLimitExpired], [[.startWriteLimit, .endEvents], []]),
        ("the write limit while open does nothing",
         [.writeLimitExpired], [[]]),
        ("a second close only adds that the recorder caught up",
         [.closed(recorderCaughtUp: false), .closed(recorderCaughtUp: false), .closed(recorderCaughtUp: true)],
         [[.startWriteLimit], [], [.endEvents]]),
        ("a Begin asked after the events ended is not owed (its events are lost, and said so)",
         [.closed(recorderCaughtUp: true), .beginAsked(t(1)), .beginAccepted(t(1), 1)],
         [[.startWriteLimit, .endEvents], [], []]),
        ("stopping an open delivery closes it with the recorder caught up",
         [.beginAsked(t(1)), .stopped, .beginRefused(t(1))], [[], [.startWriteLimit], [.endEvents]]),
        ("stopping a closing delivery keeps what it owes",
         [.beginAsked(t(1)), .beginAccepted(t(1), 3), .closed(recorderCaughtUp: false), .stopped, .recorderCaughtUp, .sessionWritten(3)],
         [[], [], [.startWriteLimit], [], [], [.endEvents]]),
        ("an answer to a Begin never asked is ignored",
         [.beginAccepted(t(9), 9), .closed(recorderCaughtUp: true)], [[], [.startWriteLimit, .endEvents]]),
    ]

    @Test(arguments: cases.indices)
    func inputsGiveTheirActions(index: Int) {
        let (name, inputs, expected) = Self.cases[index]
        var machine = DeliveryLifecycle()
        for (step, input) in inputs.enumerated() {
            #expect(machine.handle(input) == expected[step], "\(name): step \(step) \(input)")
        }
    }

    /// A recorder asks for Begins, the cluster answers them in order, sessions are written, and a Modify closes the
    /// destination at a random point, the recorder catching up later; the events must end exactly once, and never
    /// while a session is owed, unless the write limit passed.
    @Test(arguments: 0..<200)
    func eventsEndOnlyWhenNothingCanStillComeSeeded(seed: Int) {
        var random = SeededGenerator(seed: UInt64(seed))
        var machine = DeliveryLifecycle()
        var asked: [DeliveryLifecycle.Ticket] = []  // unanswered, oldest first (the announcer answers in order)
        var writing: [SessionNumber] = []
        var nextTicket = 1
        var nextSession: SessionNumber = 1
        var closed = false
        var caughtUp = false
        var ended = 0
        var limitPassed = false
        for _ in 0..<40 {
            var input: Input
            switch random.next() % 7 {
            case 0 where !caughtUp:  // the old recording may still ask until the recorder caught up
                input = .beginAsked(.init(nextTicket))
                asked.append(.init(nextTicket))
                nextTicket += 1
            case 1 where !asked.isEmpty:
                input = .beginAccepted(asked.removeFirst(), nextSession)
                writing.append(nextSession)
                nextSession = nextSession.next
            case 2 where !asked.isEmpty:
                input = .beginRefused(asked.removeFirst())
            case 3 where !writing.isEmpty:
                input = .sessionWritten(writing.remove(at: Int(random.next() % UInt64(writing.count))))
            case 4 where !closed:
                closed = true
                caughtUp = random.next() % 2 == 0
                input = .closed(recorderCaughtUp: caughtUp)
            case 5 where closed && !caughtUp:
                caughtUp = true
                input = .recorderCaughtUp
            case 6 where closed && random.next() % 8 == 0:
                limitPassed = true
                input = .writeLimitExpired
            default:
                continue
            }
            let actions = machine.handle(input)
            if actions.contains(.endEvents) {
                ended += 1
                #expect(closed, "seed \(seed): events ended while open")
                #expect(limitPassed || (caughtUp && asked.isEmpty && writing.isEmpty),
                        "seed \(seed): events ended with \(asked) asked, \(writing) writing, caught up \(caughtUp)")
            }
        }
        #expect(ended <= 1, "seed \(seed): events ended \(ended) times")
        if closed && caughtUp && asked.isEmpty && writing.isEmpty {
            #expect(ended == 1, "seed \(seed): nothing owed, yet the events did not end")
        }
    }
}
