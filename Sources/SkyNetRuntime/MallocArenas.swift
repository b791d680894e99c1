#if canImport(Glibc)
import Glibc
#endif

/// glibc's malloc gives threads that allocate at once arenas of their own (up to 8 per core),
/// and each arena keeps what was freed in it. A process with a thread per link, per file
/// sender and per job reader then holds tens of MB that no data needs (W14: a coordinator over
/// ssh links at 51–66 MB, 31 MB with two arenas). Two arenas are plenty for our allocation
/// rate. Called first thing in `main`, before any thread; a MALLOC_ARENA_MAX the user set wins.
package enum MallocArenas {
    package static func limit(to count: Int32 = 2) {
        #if canImport(Glibc)
        guard getenv("MALLOC_ARENA_MAX") == nil else { return }
        // <malloc.h> is not in the Glibc module: mallopt is looked up (RTLD_DEFAULT is null).
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(nil, "mallopt") else { return }
        let arenaMax: Int32 = -8  // M_ARENA_MAX
        _ = unsafeBitCast(symbol, to: Mallopt.self)(arenaMax, count)
        #endif
    }
}
