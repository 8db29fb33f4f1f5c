import Delivery
import Sidecar
import Testing
import TestSupport

/// ``DeliveryRoster``: which delivery each destination has. Tables of inputs and the actions they must produce, then
/// a seeded property test that drives reconciles, retirements, patience, runs ending and a shutdown in any order.
@Suite struct DeliveryRosterTests {
    typealias Roster = DeliveryRoster<Int>
    typealias Input = Roster.Input
    typealias Action = Roster.Action
    static func d(_ n: Int) -> Roster.DeliveryID { .init(n) }

    /// (what happens, the inputs in order, the actions of each input)
    static let cases: [(String, [Input], [[Action]])] = [
        ("a new destination's delivery runs at once",
         [.made(destination: "a")], [[.run(d(1))]]),
        ("retiring closes it and starts its patience",
         [.made(destination: "a"), .retired(destination: "a", patienceEnds: 100)],
         [[.run(d(1))], [.close(d(1)), .startPatience(d(1), until: 100)]]),
        ("a retired delivery that ends forgets its destination",
         [.made(destination: "a"), .retired(destination: "a", patienceEnds: 100), .runEnded(d(1)), .finished(d(1), forgotten: true)],
         [[.run(d(1))], [.close(d(1)), .startPatience(d(1), until: 100)], [.finish(d(1), giveUp: false, forget: true)],
          [.destinationForgotten("a")]]),
        ("patience that runs out stops it, and its end gives up what is left",
         [.made(destination: "a"), .retired(destination: "a", patienceEnds: 100), .patienceExpired(d(1), at: 100), .runEnded(d(1))],
         [[.run(d(1))], [.close(d(1)), .startPatience(d(1), until: 100)], [.stop(d(1))], [.finish(d(1), giveUp: true, forget: true)]]),
        ("a timer that fires early does nothing",
         [.made(destination: "a"), .retired(destination: "a", patienceEnds: 100), .patienceExpired(d(1), at: 99)],
         [[.run(d(1))], [.close(d(1)), .startPatience(d(1), until: 100)], []]),
        ("a later retirement only shortens the patience",
         [.made(destination: "a"), .retired(destination: "a", patienceEnds: 100), .retired(destination: "a", patienceEnds: 200),
          .retired(destination: "a", patienceEnds: 50)],
         [[.run(d(1))], [.close(d(1)), .startPatience(d(1), until: 100)], [.close(d(1))], [.close(d(1)), .startPatience(d(1), until: 50)]]),
        // Two deliveries of one destination must never run at once: they would send the same objects twice.
        ("a retired destination used again: the old delivery stops and the new one waits for its end",
         [.made(destination: "a"), .retired(destination: "a", patienceEnds: 100), .made(destination: "a"), .runEnded(d(1)),
          .finished(d(1), forgotten: false)],
         [[.run(d(1))], [.close(d(1)), .startPatience(d(1), until: 100)], [.stop(d(1))],
          [.finish(d(1), giveUp: false, forget: false)], [.run(d(2))]]),
        ("a replaced delivery out of patience gives up nothing: its successor delivers it",
         [.made(destination: "a"), .retired(destination: "a", patienceEnds: 100), .patienceExpired(d(1), at: 100),
          .made(destination: "a"), .runEnded(d(1))],
         [[.run(d(1))], [.close(d(1)), .startPatience(d(1), until: 100)], [.stop(d(1))], [], [.finish(d(1), giveUp: false, forget: false)]]),
        // The forget removed the destination's row and folder after the new delivery was made: it registers again,
        // and the credentials the new one uses are not pruned.
        ("a destination forgotten while its successor was made is registered again, not reported forgotten",
         [.made(destination: "a"), .retired(destination: "a", patienceEnds: 100), .runEnded(d(1)), .made(destination: "a"),
          .finished(d(1), forgotten: true)],
         [[.run(d(1))], [.close(d(1)), .startPatience(d(1), until: 100)], [.finish(d(1), giveUp: false, forget: true)], [],
          [.registerAgain(d(2)), .run(d(2))]]),
        ("the patience of a delivery already ending does nothing",
         [.made(destination: "a"), .retired(destination: "a", patienceEnds: 100), .runEnded(d(1)), .patienceExpired(d(1), at: 100)],
         [[.run(d(1))], [.close(d(1)), .startPatience(d(1), until: 100)], [.finish(d(1), giveUp: false, forget: true)], []]),
        ("a serving delivery whose run ended (stopped) leaves nothing and forgets nothing",
         [.made(destination: "a"), .runEnded(d(1)), .finished(d(1), forgotten: false)],
         [[.run(d(1))], [.finish(d(1), giveUp: false, forget: false)], []]),
        ("retiring an unknown destination does nothing",
         [.retired(destination: "b", patienceEnds: 1)], [[]]),
        ("destinations are independent",
         [.made(destination: "a"), .made(destination: "b"), .retired(destination: "b", patienceEnds: 5)],
         [[.run(d(1))], [.run(d(2))], [.close(d(2)), .startPatience(d(2), until: 5)]]),
        ("shutdown closes every delivery; the grace stops those still running; the last end says all ended",
         [.made(destination: "a"), .made(destination: "b"), .shutdownAsked, .runEnded(d(1)), .finished(d(1), forgotten: false),
          .graceExpired, .runEnded(d(2)), .finished(d(2), forgotten: false)],
         [[.run(d(1))], [.run(d(2))], [.close(d(1)), .close(d(2))], [.finish(d(1), giveUp: false, forget: false)], [],
          [.stop(d(2))], [.finish(d(2), giveUp: false, forget: false)], [.allEnded]]),
        ("shutdown with nothing running has ended at once; nothing is made after it",
         [.shutdownAsked, .made(destination: "a")], [[.allEnded], []]),
        ("a successor that starts during a shutdown is closed as it runs",
         [.made(destination: "a"), .retired(destination: "a", patienceEnds: 100), .made(destination: "a"), .shutdownAsked,
          .runEnded(d(1)), .finished(d(1), forgotten: false), .runEnded(d(2)), .finished(d(2), forgotten: false)],
         [[.run(d(1))], [.close(d(1)), .startPatience(d(1), until: 100)], [.stop(d(1))], [.close(d(1)), .close(d(2))],
          [.finish(d(1), giveUp: false, forget: false)], [.run(d(2)), .close(d(2))], [.finish(d(2), giveUp: false, forget: false)],
          [.allEnded]]),
    ]

    @Test(arguments: cases.indices)
    func inputsGiveTheirActions(index: Int) {
        let (name, inputs, expected) = Self.cases[index]
        var roster = Roster()
        for (step, input) in inputs.enumerated() {
            #expect(roster.handle(input) == expected[step], "\(name): step \(step) \(input)")
        }
    }

    @Test func aDeliveryIsReusedOnlyWhileItServes() {
        var roster = Roster()
        #expect(roster.reusable("a") == nil)
        _ = roster.handle(.made(destination: "a"))
        #expect(roster.reusable("a") == Self.d(1))
        _ = roster.handle(.retired(destination: "a", patienceEnds: 10))
        #expect(roster.reusable("a") == nil)
        _ = roster.handle(.made(destination: "a"))
        #expect(roster.reusable("a") == Self.d(2))
        _ = roster.handle(.shutdownAsked)
        #expect(roster.reusable("a") == nil)
    }

    /// Reconciles, retirements, patience, runs ending and a shutdown in a random order, the machine performing as the
    /// shell does (a run ends only after it ran; a finish is answered). Invariants: at most one delivery of a
    /// destination runs at a time; what is left is given up, and a destination forgotten, only by its newest
    /// delivery; credentials are pruned only while nothing delivers for the destination; a shutdown ends with
    /// "all ended" exactly once, and only when nothing is left.
    @Test(arguments: 0..<300)
    func oneDeliveryPerDestinationRunsAtATimeSeeded(seed: Int) {
        var random = SeededGenerator(seed: UInt64(seed))
        var roster = Roster()
        let destinations = ["a", "b"]
        var running: Set<Roster.DeliveryID> = []  // run and not yet ended
        var finishing: [Roster.DeliveryID: Bool] = [:]  // finish asked; whether it forgets
        var destinationOf: [Roster.DeliveryID: String] = [:]
        var patience: [(Roster.DeliveryID, Int)] = []
        var now = 0
        var allEnded = 0
        for _ in 0..<60 {
            now += 1
            let destination = destinations[Int(random.next() % 2)]
            var input: Input
            switch random.next() % 6 {
            case 0 where roster.reusable(destination) == nil && !roster.shuttingDown:
                destinationOf[roster.nextDeliveryID] = destination
                input = .made(destination: destination)
            case 1:
                input = .retired(destination: destination, patienceEnds: now + Int(random.next() % 10))
            case 2 where !patience.isEmpty:
                let (id, at) = patience.remove(at: Int(random.next() % UInt64(patience.count)))
                input = .patienceExpired(id, at: max(at, now))
            case 3 where !running.isEmpty:
                let id = running.sorted()[Int(random.next() % UInt64(running.count))]
                running.remove(id)
                input = .runEnded(id)
            case 4 where !finishing.isEmpty:
                let id = finishing.keys.sorted()[Int(random.next() % UInt64(finishing.count))]
                let forgets = finishing.removeValue(forKey: id)!
                input = .finished(id, forgotten: forgets && random.next() % 2 == 0)
            case 5 where random.next() % 10 == 0:
                input = roster.shuttingDown ? .graceExpired : .shutdownAsked
            default:
                continue
            }
            let actions = roster.handle(input)
            for action in actions {
                switch action {
                case .run(let id):
                    let key = destinationOf[id]!
                    #expect(!running.contains { destinationOf[$0] == key } && !finishing.keys.contains { destinationOf[$0] == key },
                            "seed \(seed): \(id) runs while another delivery of \(key) has not finished")
                    running.insert(id)
                case .startPatience(let id, let until):
                    patience.append((id, until))
                case .finish(let id, let giveUp, let forget):
                    if giveUp || forget {
                        #expect(roster.newest[destinationOf[id]!] == id, "seed \(seed): \(id) leaves behind for a destination it no longer is the newest of")
                    }
                    finishing[id] = forget
                case .destinationForgotten(let key):
                    #expect(roster.newest[key] == nil, "seed \(seed): \(key)'s credentials pruned while a delivery uses them")
                case .allEnded:
                    allEnded += 1
                    #expect(roster.entries.isEmpty, "seed \(seed): all ended with \(roster.entries.count) left")
                case .close, .stop, .registerAgain:
                    break
                }
            }
        }
        #expect(allEnded <= 1, "seed \(seed): all ended \(allEnded) times")
        if roster.shuttingDown && roster.entries.isEmpty { #expect(allEnded == 1, "seed \(seed): nothing left, yet not all ended") }
    }
}
