// loadtest: a load generator on the project's event loops. `loadtest` alone runs the demo: an in-process echo
// server driven by 1,000 ping-pong connections for 10 s. See `loadtest --help`.
import Glibc
import LoadTest

exit(LoadTestMain.run(Array(CommandLine.arguments.dropFirst())))
