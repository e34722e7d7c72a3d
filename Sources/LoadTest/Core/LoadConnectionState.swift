/// Where one of loadtest's client connections is in its life (the engine's own `ConnectionState`, in
/// LoopSocket, is another thing: this one is the load generator's, four cases and no events).
enum LoadConnectionState {
    case idle, connecting, open, closed
}
