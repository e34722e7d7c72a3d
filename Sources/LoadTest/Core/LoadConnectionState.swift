/// Where a client connection is in its life.
enum ConnectionState {
    case idle, connecting, open, closed
}
