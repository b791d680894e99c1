@testable import SkyNetRuntime
import Testing

/// `changeValue(forKey:)` changes the value that is there, in place, and says whether one was:
/// it adds nothing for a key that is not there, and leaves every other value as it was.
@Suite struct DictionaryChangeTests {
    struct Pending: Equatable { var sender: Int?; var deadline: Int? }

    @Test func aValueThatIsThereIsChangedAndOneThatIsNotIsNotAdded() {
        var pending: [Int: Pending] = [1: Pending(), 2: Pending(sender: 7)]
        #expect(pending.changeValue(forKey: 1) { $0.deadline = 5 })
        #expect(!pending.changeValue(forKey: 3) { $0.deadline = 5 })
        #expect(pending == [1: Pending(deadline: 5), 2: Pending(sender: 7)])
    }

    @Test func aCopyTakenBeforeTheChangeKeepsWhatItHad() {
        var pending: [Int: Pending] = [1: Pending()]
        let before = pending
        pending.changeValue(forKey: 1) { $0.sender = 9 }
        #expect(before[1] == Pending() && pending[1] == Pending(sender: 9))
    }

    @Test func aChangeThatThrowsLeavesTheRestAndThrows() {
        struct Refused: Error {}
        var pending: [Int: Pending] = [1: Pending()]
        #expect(throws: Refused.self) { try pending.changeValue(forKey: 1) { _ in throw Refused() } }
        #expect(pending == [1: Pending()])
    }
}
