/*
 * Copyright the EpollLoop authors.
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 * http://www.apache.org/licenses/LICENSE-2.0
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 *
 * http_server PORT: the C yardstick for the HTTP hello benchmark. Every HTTP/1.1 request (a head ended by
 * "\r\n\r\n"; no bodies: it is meant for GETs from wrk or loadtest) gets the same keep-alive 200 with the
 * body "hello". Requests may be pipelined or split across reads: a connection remembers how much of the
 * terminator it has seen, and all the answers to one read go out in one send. The loop is tcp_server.h's.
 */
#include "tcp_server.h"

static const char response[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello";
#define RESPONSE_LENGTH (sizeof response - 1)
#define MAX_ANSWERS_PER_READ 512

/* A connection's protocol_state: how many bytes of "\r\n\r\n" it had matched at the end of its last read. */
static char answers[MAX_ANSWERS_PER_READ * RESPONSE_LENGTH];

static int reply(int fd, const char *received, size_t length) {
    static const char terminator[] = "\r\n\r\n";
    if ((size_t)fd >= pending_capacity) return -1;
    unsigned state = pending_of[fd].protocol_state;
    size_t count = 0;
    for (size_t i = 0; i < length; i++) {
        char c = received[i];
        if (c == terminator[state]) state++;
        else state = (c == '\r') ? 1 : 0;
        if (state == 4) {
            state = 0;
            if (count == MAX_ANSWERS_PER_READ) { /* a flood of tiny pipelined requests: send what is ready */
                if (send_or_queue(fd, answers, sizeof answers) < 0 || pending_of[fd].data != NULL) return -1;
                count = 0;
            }
            memcpy(answers + count * RESPONSE_LENGTH, response, RESPONSE_LENGTH);
            count++;
        }
    }
    pending_of[fd].protocol_state = state;
    if (count == 0) return 0;
    if (pending_of[fd].data != NULL) return -1; /* cannot happen: a connection with pending bytes is not read */
    return send_or_queue(fd, answers, count * RESPONSE_LENGTH);
}

int main(int argc, char **argv) { return serve("http_server", argc, argv); }
