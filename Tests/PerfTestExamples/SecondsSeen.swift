import LoadTest
import Synchronization

/// The samples a progress handler was given, from the run's thread.
final class SecondsSeen: Sendable {
    private let samples = Mutex<[LoadTest.Sample]>([])

    func add(_ sample: LoadTest.Sample) { samples.withLock { $0.append(sample) } }

    var all: [LoadTest.Sample] { samples.withLock { $0 } }
}
