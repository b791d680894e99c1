/// A first-in first-out queue that frees the room of taken elements as it goes.
package struct FIFO<Element> {
    private var elements: [Element] = []
    private var head = 0

    package init() {}

    package var isEmpty: Bool { head == elements.count }
    package var count: Int { elements.count - head }

    /// The oldest element, if any.
    package var first: Element? { isEmpty ? nil : elements[head] }

    package mutating func append(_ element: Element) {
        elements.append(element)
    }

    /// The oldest element. Call only when not empty.
    @discardableResult
    package mutating func removeFirst() -> Element {
        let element = elements[head]
        head += 1
        if head > 64, head * 2 > elements.count {
            elements.removeFirst(head)
            head = 0
        }
        return element
    }
}

extension FIFO: Sendable where Element: Sendable {}
