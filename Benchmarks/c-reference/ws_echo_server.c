/*
 * Copyright the EpollLoop authors.
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 * http://www.apache.org/licenses/LICENSE-2.0
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 *
 * ws_echo_server PORT: the C yardstick for `loadtest ws`. A WebSocket (RFC 6455) echo server on
 * tcp_server.h's loop: the opening handshake (Sec-WebSocket-Accept from OpenSSL's SHA-1), then every text or
 * binary frame sent back unmasked with its opcode and FIN, pings answered with pongs, a close answered with a
 * close and the connection ended. All the frames of one read go out in one send. It trusts its client (no
 * UTF-8 check, frames up to 16 MiB): it is a yardstick for a load generator's cost per message, not a
 * conforming server.
 */
#include "tcp_server.h"

#include <openssl/sha.h>

#define MAX_FRAME (16u << 20)

/* Per connection, by descriptor: bytes of an unfinished head or frame carried to the next read. A
 * connection's protocol_state (reset by tcp_server.h when it closes) says where it is: 0 new, 1 reading the
 * handshake head, 2 exchanging frames. */
struct carry {
    char *data;
    size_t length, capacity;
};
static struct carry *carry_of;
static char *out;
static size_t out_capacity;

static int append(struct carry *c, const char *bytes, size_t length) {
    if (c->length + length > c->capacity) {
        size_t capacity = c->capacity ? c->capacity : 4096;
        while (capacity < c->length + length) capacity *= 2;
        char *grown = realloc(c->data, capacity);
        if (grown == NULL) return -1;
        c->data = grown;
        c->capacity = capacity;
    }
    memcpy(c->data + c->length, bytes, length);
    c->length += length;
    return 0;
}

static int reserve_out(size_t length) {
    if (length <= out_capacity) return 0;
    size_t capacity = out_capacity ? out_capacity : 1u << 16;
    while (capacity < length) capacity *= 2;
    char *grown = realloc(out, capacity);
    if (grown == NULL) return -1;
    out = grown;
    out_capacity = capacity;
    return 0;
}

static int handshake(int fd, const char *head) {
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    const char *key = strcasestr(head, "\r\nSec-WebSocket-Key:");
    if (key == NULL) return -1;
    key += strlen("\r\nSec-WebSocket-Key:");
    while (*key == ' ') key++;
    size_t key_length = strcspn(key, " \r");
    if (key_length == 0 || key_length > 64) return -1;
    char joined[128];
    memcpy(joined, key, key_length);
    memcpy(joined + key_length, guid, sizeof guid - 1);
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)joined, key_length + sizeof guid - 1, digest);
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char accept[29];
    for (int i = 0, j = 0; i < 21; i += 3, j += 4) {
        unsigned v = digest[i] << 16 | (i + 1 < 20 ? digest[i + 1] << 8 : 0) | (i + 2 < 20 ? digest[i + 2] : 0);
        accept[j] = alphabet[v >> 18 & 63];
        accept[j + 1] = alphabet[v >> 12 & 63];
        accept[j + 2] = i + 1 < 20 ? alphabet[v >> 6 & 63] : '=';
        accept[j + 3] = i + 2 < 20 ? alphabet[v & 63] : '=';
    }
    accept[28] = 0;
    char response[256];
    int n = snprintf(response, sizeof response, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", accept);
    return send_or_queue(fd, response, (size_t)n);
}

/* Answers the whole frames at the start of `bytes`; returns how many bytes they took (-1: close). */
static long frames(int fd, const unsigned char *bytes, size_t length) {
    size_t at = 0, produced = 0;
    int closing = 0;
    while (!closing && length - at >= 2) {
        const unsigned char *f = bytes + at;
        uint64_t n = f[1] & 0x7F;
        size_t header = 2;
        if (n == 126) {
            if (length - at < 4) break;
            n = (uint64_t)f[2] << 8 | f[3];
            header = 4;
        } else if (n == 127) {
            if (length - at < 10) break;
            n = 0;
            for (int i = 2; i < 10; i++) n = n << 8 | f[i];
            header = 10;
        }
        if (n > MAX_FRAME || !(f[1] & 0x80)) return -1; /* too long, or an unmasked client frame */
        header += 4;
        if (length - at < header + n) break;
        unsigned opcode = f[0] & 0x0F;
        if (opcode == 0x8) closing = 1;
        if (opcode == 0xA) { at += header + n; continue; } /* a pong needs no answer */
        if (opcode == 0x9) opcode = 0xA;                    /* a ping is answered by a pong */
        if (reserve_out(produced + 10 + n) < 0) return -1;
        unsigned char *o = (unsigned char *)out + produced;
        o[0] = (f[0] & 0x80) | opcode;
        size_t oh = 2;
        if (n < 126) o[1] = (unsigned char)n;
        else if (n <= 0xFFFF) { o[1] = 126; o[2] = (unsigned char)(n >> 8); o[3] = (unsigned char)n; oh = 4; }
        else { o[1] = 127; for (int i = 0; i < 8; i++) o[2 + i] = (unsigned char)(n >> (56 - 8 * i)); oh = 10; }
        const unsigned char *key = f + header - 4, *payload = f + header;
        for (uint64_t i = 0; i < n; i++) o[oh + i] = payload[i] ^ key[i & 3];
        produced += oh + n;
        at += header + n;
    }
    if (produced > 0) {
        if (pending_of[fd].data != NULL) return -1; /* cannot happen: a connection with pending bytes is not read */
        if (send_or_queue(fd, out, produced) < 0) return -1;
    }
    return closing ? -1 : (long)at;
}

static int reply(int fd, const char *received, size_t length) {
    if ((size_t)fd >= pending_capacity) return -1;
    struct carry *c = &carry_of[fd];
    unsigned *state = &pending_of[fd].protocol_state;
    if (*state == 0) { c->length = 0; *state = 1; }
    const char *bytes = received;
    size_t count = length;
    if (c->length > 0) {
        if (append(c, received, length) < 0) return -1;
        bytes = c->data;
        count = c->length;
    }
    size_t used = 0;
    if (*state == 1) {
        const char *end = memmem(bytes, count, "\r\n\r\n", 4);
        if (end == NULL) {
            if (count > 16384) return -1;
            if (c->length == 0 && append(c, received, length) < 0) return -1;
            return 0;
        }
        char head[16385];
        size_t head_length = (size_t)(end - bytes) + 4;
        if (head_length > 16384) return -1;
        memcpy(head, bytes, head_length);
        head[head_length] = 0;
        if (handshake(fd, head) < 0) return -1;
        *state = 2;
        used = head_length;
    }
    long taken = frames(fd, (const unsigned char *)bytes + used, count - used);
    if (taken < 0) return -1;
    used += (size_t)taken;
    /* What is left (an unfinished frame) is carried to the next read. */
    size_t rest = count - used;
    if (c->length > 0) {
        memmove(c->data, c->data + used, rest);
        c->length = rest;
    } else if (rest > 0 && append(c, bytes + used, rest) < 0) {
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    carry_of = calloc(1u << 20, sizeof *carry_of);
    if (carry_of == NULL) return 1;
    return serve("ws_echo_server", argc, argv);
}
