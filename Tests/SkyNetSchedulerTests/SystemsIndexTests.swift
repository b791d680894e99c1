@testable import SkyNetCluster
@testable import SkyNetScheduler
import SkyNetTestSupport
import Testing

/// `Systems` finds the first free slot through an index it keeps beside its list of
/// systems. Checked against a model that walks the list as the registry is specified to: the
/// first system in order (local ones first) that is not suspended, draining or leaving and has
/// a slot free. A seeded mix of adds (peers at the end, locals before the peers, replacements
/// in place or, of the other kind, where that kind goes), removals from the middle, suspensions, drains, leaves, reservations and releases
/// over a few hundred systems; every reservation must land where the model says.
@Suite(.timeLimit(.minutes(1)))
struct SystemsIndexTests {
    private struct Model {
        struct System { var name: String; var isLocal: Bool; var capacity: Int; var inFlight = 0
                        var suspended = false; var draining = false }
        var systems: [System] = []
        var leaving: Set<String> = []

        mutating func add(_ name: String, isLocal: Bool, capacity: Int) {
            let system = System(name: name, isLocal: isLocal, capacity: capacity)
            if let index = systems.firstIndex(where: { $0.name == name }), systems[index].isLocal != isLocal {
                systems.remove(at: index)
            }
            if let index = systems.firstIndex(where: { $0.name == name }) {
                systems[index] = system
            } else if isLocal, let firstPeer = systems.firstIndex(where: { !$0.isLocal }) {
                systems.insert(system, at: firstPeer)
            } else {
                systems.append(system)
            }
        }

        func firstFree(localOnly: Bool) -> Int? {
            systems.firstIndex { !$0.suspended && !$0.draining && $0.inFlight < $0.capacity
                && (!localOnly || $0.isLocal) && !leaving.contains($0.name) }
        }
    }

    @Test func everyReservationLandsWhereAWalkOverTheListWould() async throws {
        let systems = Systems()
        var model = Model()
        var generator = SeededGenerator(seed: 20261129)
        var held: [String: [Reservation]] = [:]
        var nextName = 0
        for step in 0..<6_000 {
            let roll = Int.random(in: 0..<100, using: &generator)
            let names = model.systems.map(\.name)
            let someName = names.randomElement(using: &generator)
            switch roll {
            case 0..<12:
                // A new peer, now and then a new local system, now and then a replacement (of
                // either kind, whatever the kind it replaces).
                let replace = roll < 2 && someName != nil
                let isLocal = replace ? Bool.random(using: &generator) : roll < 4
                let name = replace ? someName! : (isLocal ? "local-\(nextName)" : "peer-\(nextName)")
                nextName += 1
                let capacity = Int.random(in: 0...3, using: &generator)
                model.add(name, isLocal: isLocal, capacity: capacity)
                await systems.add(AlwaysFailingSystem(name: name, isLocal: isLocal), capacity: capacity)
                held[name] = []  // a replaced system's slots are released into nothing
            case 12..<16:
                guard let name = someName else { continue }
                model.systems.removeAll { $0.name == name }
                await systems.remove(named: name)
                held[name] = nil
            case 16..<22:
                guard let name = someName, let index = model.systems.firstIndex(where: { $0.name == name }) else { continue }
                let flag = Bool.random(using: &generator)
                if roll < 19 {
                    model.systems[index].suspended = flag
                    await systems.setSuspended(flag, named: name)
                } else {
                    model.systems[index].draining = flag
                    await systems.setDraining(flag, named: name)
                }
            case 22..<25:
                guard let name = someName else { continue }
                let isLeaving = Bool.random(using: &generator)
                if isLeaving { model.leaving.insert(name) } else { model.leaving.remove(name) }
                await systems.setLeaving(isLeaving, named: name)
            case 25..<70:
                let localOnly = roll < 35
                let expected = model.firstFree(localOnly: localOnly).map { model.systems[$0].name }
                let reservation = await systems.tryReserve(localOnly: localOnly)
                #expect(reservation?.name == expected, "step \(step)")
                guard let reservation, let index = model.systems.firstIndex(where: { $0.name == reservation.name }) else { continue }
                model.systems[index].inFlight += 1
                held[reservation.name, default: []].append(reservation)
            default:
                guard let name = held.filter({ !$0.value.isEmpty }).keys.sorted().randomElement(using: &generator),
                      let reservation = held[name]?.popLast() else { continue }
                if let index = model.systems.firstIndex(where: { $0.name == name }) { model.systems[index].inFlight -= 1 }
                await systems.release(reservation)
            }
            if step % 500 == 0 {
                #expect(await systems.names == model.systems.map(\.name), "step \(step)")
                #expect(await systems.slotUse.map(\.name) == model.systems.map(\.name), "step \(step)")
                #expect(await systems.localCapacity == model.systems.filter(\.isLocal).reduce(0) { $0 + $1.capacity }, "step \(step)")
            }
        }
        #expect(await systems.names == model.systems.map(\.name))
        #expect(model.systems.count > 100)
        // Every system goes, in a random order (as ten thousand links close at the end of a
        // scan): what is left is still found in order, and a name that left may come back.
        for (count, name) in model.systems.map(\.name).shuffled(using: &generator).enumerated() {
            model.systems.removeAll { $0.name == name }
            await systems.remove(named: name)
            if count % 7 == 0 {
                let expected = model.firstFree(localOnly: false).map { model.systems[$0].name }
                let reservation = await systems.tryReserve()
                #expect(reservation?.name == expected, "after \(count + 1) removals")
                if let reservation, let index = model.systems.firstIndex(where: { $0.name == reservation.name }) {
                    model.systems[index].inFlight += 1
                }
                #expect(await systems.names == model.systems.map(\.name), "after \(count + 1) removals")
            }
        }
        #expect(await systems.names.isEmpty)
        #expect(await systems.slotUse.isEmpty)
        await systems.add(AlwaysFailingSystem(name: "peer-0", isLocal: false), capacity: 1)
        #expect(await systems.tryReserve()?.name == "peer-0")
    }
}

extension SystemsIndexTests {
    /// A removed system waits for the list to be compacted without its system: a peer that
    /// left does not keep its link (and all it holds) alive meanwhile.
    @Test func aRemovedSystemIsNotKeptAliveByItsPlace() async throws {
        let systems = Systems()
        for index in 0..<10 { await systems.add(AlwaysFailingSystem(name: "peer-\(index)", isLocal: false), capacity: 1) }
        weak var gone: AlwaysFailingSystem?
        do {
            let system = AlwaysFailingSystem(name: "leaving", isLocal: false)
            gone = system
            await systems.add(system, capacity: 1)
        }
        await systems.remove(named: "leaving")
        #expect(gone == nil)
        #expect(await systems.names == (0..<10).map { "peer-\($0)" })
    }
}

/// A small deterministic generator (SplitMix64): the same seed, the same steps.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
