import Foundation
@testable import SkyNetCluster
@testable import SkyNetMetrics
@testable import SkyNetRuntime
import SkyNetWork
import Testing

/// Task counts and times: the outcome of each failure code, unknown jobs under one label,
/// busy refusals out of the histogram.
@Suite struct TaskMetricsTests {
    @Test func failureCodesMapToOutcomes() {
        #expect(TaskMetrics.outcome(of: FailureCode.cancelled) == .cancelled)
        #expect(TaskMetrics.outcome(of: FailureCode.deadline) == .deadline)
        #expect(TaskMetrics.outcome(of: FailureCode.busy) == .busy)
        #expect(TaskMetrics.outcome(of: FailureCode.taskFailed) == .failed)
        #expect(TaskMetrics.outcome(of: FailureCode.unknownJob) == .failed)
        #expect(TaskMetrics.outcome(of: FailureCode.noSpace) == .failed)
        #expect(TaskMetrics.outcome(of: FailureCode.other("new")) == .failed)
        #expect(TaskMetrics.outcome(of: CancellationError()) == .cancelled)
        #expect(TaskMetrics.outcome(of: ScanFailure(code: .deadline, message: "late")) == .deadline)
    }

    @Test func everyKnownPairIsThereAtZeroBeforeAnyTask() {
        let metrics = TaskMetrics(jobs: ["scan", "nap"])
        let text = String(decoding: PrometheusText.render(metrics.families()), as: UTF8.self)
        for job in ["scan", "nap"] {
            for outcome in TaskMetrics.Outcome.allCases {
                #expect(text.contains("skynet_tasks_total{job=\"\(job)\",outcome=\"\(outcome.rawValue)\"} 0\n"))
            }
            #expect(text.contains("skynet_task_seconds_count{job=\"\(job)\"} 0\n"))
        }
        #expect(!text.contains("(unknown)"))
    }

    @Test func aJobOutsideTheListIsCountedAsUnknown() {
        let metrics = TaskMetrics(jobs: ["scan"])
        metrics.record(job: "evil\"name", outcome: .failed, seconds: 0.2)
        metrics.record(job: "other", outcome: .failed, seconds: 0.3)
        #expect(metrics.count(job: TaskMetrics.unknownJob, outcome: .failed) == 2)
        let text = String(decoding: PrometheusText.render(metrics.families()), as: UTF8.self)
        #expect(!text.contains("evil"))
        #expect(!text.contains("other"))
        #expect(text.contains("skynet_tasks_total{job=\"(unknown)\",outcome=\"failed\"} 2\n"))
    }

    @Test func busyIsCountedButNotTimed() {
        let metrics = TaskMetrics(jobs: ["scan"])
        metrics.record(job: "scan", outcome: .completed, seconds: 0.02)
        metrics.record(job: "scan", outcome: .busy, seconds: nil)
        metrics.record(job: "scan", outcome: .busy, seconds: 5)
        #expect(metrics.count(job: "scan", outcome: .busy) == 2)
        let histogram = metrics.families()[1].histograms[0].counts
        #expect(histogram.count == 1)
        #expect(histogram.cumulative.first == 0)  // 0.02 is above 0.01
        #expect(histogram.cumulative[1] == 1)
    }
}
