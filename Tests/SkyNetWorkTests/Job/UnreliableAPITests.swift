import Testing
@testable import SkyNet
@testable import SkyNetWork

struct UnreliableAPITests {
    @Test func failsEveryTenthCallInOrder() {
        let api = UnreliableAPI(failingEvery: 10)
        var failing: [Int] = []
        for call in 1...30 {
            do { try api.action() } catch { failing.append(call) }
        }
        #expect(failing == [10, 20, 30])
    }

    @Test func failsExactlyEveryNthCallUnderConcurrency() async {
        let api = UnreliableAPI(failingEvery: 7)
        let failures = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<7000 {
                group.addTask {
                    do { try api.action(); return 0 } catch { return 1 }
                }
            }
            return await group.reduce(0, +)
        }
        #expect(failures == 1000)
    }

    @Test func zeroNeverFails() throws {
        let api = UnreliableAPI(failingEvery: 0)
        for _ in 0..<100 { try api.action() }
    }

    @Test func failureTextIsTheReferenceText() {
        #expect(UnreliableAPI.Failure().description == "UnreliableAPI.action(failingEvery:) failed.")
    }
}
