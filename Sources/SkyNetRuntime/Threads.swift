/// Runs `body` on a new thread of its own: where blocking calls (accept, recv, a send that
/// waits, connect, read) belong, away from the cooperative pool.
package func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    let start = Unmanaged.passRetained(ThreadStart(name: name, body: body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setstacksize(&attributes, 512 * 1024)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    #if canImport(Glibc)
    var thread = pthread_t()
    #else
    var thread: pthread_t?
    #endif
    let failure = pthread_create(&thread, &attributes, { ThreadStart.run($0) }, start)
    // Out of threads (or of memory for a stack): the caller would wait for its body forever.
    precondition(failure == 0, "cannot start thread \(name): \(String(cString: strerror(failure)))")
}

/// Runs a blocking call on a thread of its own and awaits its result.
package func onOwnThread<T: Sendable>(named name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        startThread(named: name) { continuation.resume(with: Result { try body() }) }
    }
}

/// Sleeps the calling thread for `duration` (a thread of our own: never one of the pool).
package func sleepOnThisThread(for duration: Duration) {
    let (seconds, attoseconds) = duration.components
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1, errno == EINTR { request = remaining }
}

/// What a new thread runs, handed through `pthread_create`'s one pointer.
private final class ThreadStart {
    let name: String
    let body: @Sendable () -> Void

    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }

    /// The new thread's first function: `start` is the retained `ThreadStart` given to it.
    static func run(_ start: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
        guard let start else { return nil }
        let thread = Unmanaged<ThreadStart>.fromOpaque(start).takeRetainedValue()
        thread.nameThisThread()
        thread.body()
        return nil
    }

    /// Gives the calling thread its name (15 bytes at most) where `perf` and `top` read it
    /// (Glibc's module does not offer `pthread_setname_np`).
    private func nameThisThread() {
        #if canImport(Glibc)
        let descriptor = open("/proc/thread-self/comm", O_WRONLY)
        guard descriptor >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        #else
        pthread_setname_np(String(decoding: name.utf8.prefix(15), as: UTF8.self))
        #endif
    }
}
