import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport

/// The estimate of the progress line's `ETA`, fed synthetic completion times.
@Suite(.onOwnThread) struct ETAEstimatorTests {
    /// Observes `rate` completions a second from `start` to `end`, ten times a second as the
    /// progress line's ticker does; returns the count reached.
    func feed(_ estimator: inout ETAEstimator, rate: Double, from start: Double, to end: Double, startingAt count: Double) -> Double {
        let ticks = Int(((end - start) * 10).rounded())
        for tick in stride(from: 1, through: ticks, by: 1) {
            let finished = count + rate * Double(tick) / 10
            estimator.observe(finished: Int(finished.rounded(.down)), at: start + Double(tick) / 10)
        }
        return count + rate * Double(ticks) / 10
    }

    @Test func aConstantRateGivesTheRightETA() throws {
        var estimator = ETAEstimator()
        _ = feed(&estimator, rate: 10, from: 0, to: 60, startingAt: 0)
        #expect(estimator.finished == 600)
        let left = try #require(estimator.secondsLeft(total: 1000, at: 60))
        #expect(abs(left - 40) < 1.5, "\(left)")
    }

    @Test func aFasterRateIsFollowedWithinTheWindow() throws {
        var estimator = ETAEstimator(window: 20)
        var count = feed(&estimator, rate: 10, from: 0, to: 60, startingAt: 0)
        count = feed(&estimator, rate: 40, from: 60, to: 90, startingAt: count)
        // 1,800 done, 1,200 left at 40 a second: 30 s (the average since the start, 20 a second, says 60).
        let left = try #require(estimator.secondsLeft(total: 3000, at: 90))
        #expect(abs(left - 30) < 2, "\(left)")
    }

    @Test func aSlowerRateIsFollowedWithinTheWindow() throws {
        var estimator = ETAEstimator(window: 20)
        var count = feed(&estimator, rate: 40, from: 0, to: 60, startingAt: 0)
        count = feed(&estimator, rate: 10, from: 60, to: 90, startingAt: count)
        // 2,700 done, 300 left at 10 a second: 30 s (the average since the start says 10).
        let left = try #require(estimator.secondsLeft(total: 3000, at: 90))
        #expect(abs(left - 30) < 2, "\(left)")
    }

    @Test func noDataIsNoEstimate() {
        var estimator = ETAEstimator()
        #expect(estimator.secondsLeft(total: 100, at: 0) == nil)
        #expect(estimator.secondsLeft(total: 100, at: 30) == nil)
        estimator.observe(finished: 2, at: 5)
        #expect(estimator.secondsLeft(total: 100, at: 6) == nil)  // fewer than three finished
        var early = ETAEstimator()
        early.observe(finished: 50, at: 0.5)
        #expect(early.secondsLeft(total: 100, at: 0.5) == nil)  // not a second yet
        #expect(ETAEstimator.label(nil) == "ETA --:--")
    }

    @Test func aFinishedScanHasNothingLeftAndNothingIsEverNegative() {
        var estimator = ETAEstimator()
        #expect(estimator.secondsLeft(total: 0, at: 0) == 0)
        _ = feed(&estimator, rate: 10, from: 0, to: 10, startingAt: 0)
        #expect(estimator.secondsLeft(total: 100, at: 10) == 0)
        // More finished than the total (a resumed count, a miscount): still 0, never below.
        #expect(estimator.secondsLeft(total: 50, at: 10) == 0)
        #expect(ETAEstimator.label(0) == "ETA 0:00")
        #expect(ETAEstimator.label(-3) == "ETA --:--")
    }

    @Test func aStalledScansEstimateGrowsAndNeverOverflows() throws {
        var estimator = ETAEstimator()
        _ = feed(&estimator, rate: 10, from: 0, to: 30, startingAt: 0)
        let atStall = try #require(estimator.secondsLeft(total: 1000, at: 30))
        let later = try #require(estimator.secondsLeft(total: 1000, at: 120))
        let muchLater = try #require(estimator.secondsLeft(total: 1000, at: 3600))
        #expect(atStall < later && later < muchLater)
        // A rate too slow to finish in a thousand hours is no estimate, not an overflow.
        #expect(estimator.secondsLeft(total: Int.max, at: 3600) == nil)
        #expect(estimator.secondsLeft(total: 1000, at: .infinity) == nil)
    }

    @Test func tasksThatTakeMinutesStillGetAnEstimate() throws {
        var estimator = ETAEstimator(window: 20)
        // One task finishes every 30 s: the 20 s window alone often holds none.
        for index in 1...10 { estimator.observe(finished: index, at: Double(index) * 30) }
        let left = try #require(estimator.secondsLeft(total: 20, at: 310))
        // 10 left at one per 30 s: about 300 s.
        #expect(left > 250 && left < 350, "\(left)")
    }

    @Test func randomArrivalsAtASteadyRateGiveAnETANearTheTruth() throws {
        var random = SeededRandom(seed: 12)
        var estimator = ETAEstimator()
        var time = 0.0, finished = 0
        // Poisson arrivals at 50 a second for 60 s, observed as they happen.
        while time < 60 {
            time += -log(Double.random(in: Double.ulpOfOne..<1, using: &random)) / 50
            finished += 1
            estimator.observe(finished: finished, at: time)
        }
        let left = try #require(estimator.secondsLeft(total: finished + 1000, at: time))
        #expect(left > 17 && left < 23, "\(left)")  // 1,000 left at 50 a second: 20 s
    }

    @Test func memoryStaysBoundedAtAnyRate() {
        var estimator = ETAEstimator()
        for tick in 1...100_000 { estimator.observe(finished: tick * 2000, at: Double(tick) / 10) }
        #expect(estimator.sampleCount <= ETAEstimator.capacity)
        #expect(estimator.secondsLeft(total: 300_000_000, at: 10_000) != nil)
    }

    @Test func labelsReadLikeAClock() {
        #expect(ETAEstimator.label(42) == "ETA 0:42")
        #expect(ETAEstimator.label(0.2) == "ETA 0:01")  // rounded up: 0:00 only when done
        #expect(ETAEstimator.label(59.5) == "ETA 1:00")
        #expect(ETAEstimator.label(605) == "ETA 10:05")
        #expect(ETAEstimator.label(3723) == "ETA 1:02:03")
        #expect(ETAEstimator.label(.infinity) == "ETA --:--")
    }
}
