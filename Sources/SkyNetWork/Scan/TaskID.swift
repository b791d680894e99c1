import SkyNetRuntime
import Synchronization

/// Task ids, made without a system call each.
///
/// Foundation's `UUID()` opens, reads and closes `/dev/urandom` for every id on Linux: three
/// system calls per task, a tenth of a million-task scan's time. Here the process draws one
/// random 128-bit base once and each id adds a counter to it (times an odd number, so ids
/// differ in many bits): ids are distinct within the process, and a collision with another
/// process needs their random bases to meet (odds about 2^-122). The version and variant
/// bits say "random UUID", as before.
@usableFromInline
enum TaskID {
    private static let base: (UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next())
    }()
    private static let counter = Atomic<UInt64>(0)

    @usableFromInline
    static func next() -> UUID {
        let count = counter.add(1, ordering: .relaxed).newValue
        let high = (base.0 & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000  // version 4
        let low = ((base.1 &+ count &* 0x9E37_79B9_7F4A_7C15) & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // variant
        return UUID(uuid: unsafeBitCast((high.bigEndian, low.bigEndian), to: uuid_t.self))  // both 16 bytes, in order
    }
}
