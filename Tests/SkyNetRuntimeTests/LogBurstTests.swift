@testable import SkyNetRuntime
import Testing

/// A burst is told whole: its first line at once, the rest summed at most every interval, none
/// left out; after everything was told and a quiet interval, the next event begins a new burst.
struct LogBurstTests {
    let start = ContinuousClock.now

    @Test func theFirstEventIsToldAtOnceAndTheRestSummedOncePerInterval() {
        var burst = LogBurst()
        #expect(burst.count(now: start) == .first(count: 1))
        for second in 1...3 { #expect(burst.count(now: start + .seconds(second)) == nil) }
        #expect(burst.flush(now: start + .seconds(9)) == nil)
        #expect(burst.flush(now: start + LogBurst.interval) == .more(count: 3, since: LogBurst.interval))
        #expect(burst.flush(now: start + .seconds(60)) == nil)  // nothing left
    }

    @Test func eventsCountedTogetherAreOneLine() {
        var burst = LogBurst()
        #expect(burst.count(5, now: start) == .first(count: 5))
        #expect(burst.count(2, now: start + .seconds(1)) == nil)
        #expect(burst.count(4, now: start + .seconds(12)) == .more(count: 6, since: .seconds(12)))
    }

    @Test func anEventAfterAToldAndQuietIntervalBeginsANewBurst() {
        var burst = LogBurst()
        _ = burst.count(now: start)
        #expect(burst.count(2, now: start + .seconds(61)) == .first(count: 2))
        // Within the interval of that line, counted and told later as more.
        #expect(burst.count(now: start + .seconds(62)) == nil)
        #expect(burst.count(now: start + .seconds(71)) == .more(count: 2, since: .seconds(10)))
    }

    @Test func nothingCountedIsNeverALine() {
        var burst = LogBurst()
        #expect(burst.flush(now: start) == nil && burst.count(0, now: start + .seconds(30)) == nil)
        #expect(burst.count(now: start + .seconds(31)) == .first(count: 1))
    }
}
