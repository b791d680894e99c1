/// Which file a name or a descriptor is: its device and inode.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    init(_ info: stat) {
        device = UInt64(truncatingIfNeeded: info.st_dev)  // dev_t is signed on Darwin
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }
}
