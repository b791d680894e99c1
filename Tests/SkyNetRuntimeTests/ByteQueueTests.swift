import SkyNetTestSupport
import Testing
@testable import SkyNetRuntime

/// A connection's send queue: what goes in comes out in order, whatever is consumed when; a
/// large message is handed out as its own bytes (never copied to be sent), small ones
/// gathered into one send.
@Suite struct ByteQueueTests {
    @Test func bytesComeOutInOrderWhateverIsSentEachTime() {
        var random = SeededRandom(seed: 1_024)
        var queue = ByteQueue(), queued: [UInt8] = [], sent = 0
        var next: UInt8 = 0
        for _ in 0..<1_000 {
            if Bool.random(using: &random) {
                let size = Bool.random(using: &random) ? Int.random(in: 0...100, using: &random) : Int.random(in: 30_000...70_000, using: &random)
                let message = (0..<size).map { _ in next &+= 1; return next }
                queue.append(message)
                queued += message
            }
            let front = queue.front(Int.random(in: 1...300_000, using: &random))
            #expect(front.elementsEqual(queued[sent..<(sent + front.count)]))
            let taken = Int.random(in: 0...front.count, using: &random)
            queue.consume(taken)
            sent += taken
            #expect(queue.count == queued.count - sent)
        }
        var rest: [UInt8] = []
        while !queue.isEmpty {
            let front = queue.front(queue.count)
            rest += front
            queue.consume(front.count)
        }
        #expect(rest.elementsEqual(queued[sent...]))
    }

    @Test func aLargeMessageIsSentFromItsOwnBytesAndSmallOnesTogether() {
        let large = [UInt8](repeating: 7, count: 100_000)
        var queue = ByteQueue()
        queue.append(large)
        let front = queue.front(256 * 1024)
        #expect(front.count == large.count)
        #expect(front.withUnsafeBytes { $0.baseAddress } == large.withUnsafeBytes { $0.baseAddress }, "a copy was made")
        queue.consume(large.count)

        queue.append([1, 2])
        queue.append([3])
        queue.append(large)
        queue.append([4])
        // The small ones gathered, up to the large one, which goes on its own next.
        #expect(Array(queue.front(256 * 1024)) == [1, 2, 3])
        #expect(Array(queue.front(2)) == [1, 2])
        queue.consume(3)
        #expect(queue.front(256 * 1024).count == large.count)
        queue.consume(large.count)
        #expect(Array(queue.front(10)) == [4])
    }
}
