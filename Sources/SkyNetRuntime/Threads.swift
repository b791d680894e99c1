import Foundation

/// Runs `body` on a new thread of its own: where blocking calls (accept, recv, a send that
/// waits, connect, read) belong, away from the cooperative pool.
public func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        nameSystemThread(name)
        body()
    }
    thread.name = name
    thread.stackSize = 512 * 1024
    thread.start()
}

/// Runs a blocking call on a thread of its own and awaits its result.
public func onOwnThread<T: Sendable>(named name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        startThread(named: name) { continuation.resume(with: Result { try body() }) }
    }
}

/// Sleeps the calling thread for `duration` (a thread of our own: never one of the pool).
func sleepOnThisThread(for duration: Duration) {
    let (seconds, attoseconds) = duration.components
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1, errno == EINTR { request = remaining }
}

/// Gives the calling thread `name` (15 bytes at most) where `perf` and `top` read it: on
/// Linux Foundation's `Thread.name` stays inside Foundation.
private func nameSystemThread(_ name: String) {
    #if canImport(Glibc)
    let descriptor = open("/proc/thread-self/comm", O_WRONLY)
    guard descriptor >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
    #endif
}
