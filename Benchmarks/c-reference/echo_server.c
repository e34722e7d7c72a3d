/*
 * Copyright the EpollLoop authors.
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 * http://www.apache.org/licenses/LICENSE-2.0
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 *
 * echo_server PORT: the C yardstick for the TCP echo benchmarks. Every byte read is sent straight back
 * (the loop is tcp_server.h's): close to the least a server can spend per echoed message on this kernel.
 */
#include "tcp_server.h"

static int reply(int fd, const char *received, size_t length) { return send_or_queue(fd, received, length); }

int main(int argc, char **argv) { return serve("echo_server", argc, argv); }
