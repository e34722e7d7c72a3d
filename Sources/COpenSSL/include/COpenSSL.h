// COpenSSL: the system OpenSSL 3 (libssl, libcrypto) as LoopSocket's TLS layer needs it.
//
// Only what Swift cannot call directly lives here: OpenSSL's function-like macros (`SSL_CTX_set_mode`,
// `SSL_set_tlsext_host_name`, ...), the C callbacks OpenSSL calls back into (the memory BIO, server name and
// ALPN selection, the verify hook that pauses a handshake for manual trust, the client session hook), and
// the loop-owned transport state (`lsock_tls`) that the BIO reads ciphertext from and writes ciphertext to.
// Every byte still moves through the socket engine's own `recv`/`send`, on its syscall seam: OpenSSL never
// sees the descriptor.
//
// Headers: Debian/Ubuntu `libssl-dev`, Fedora/RHEL `openssl-devel`, Alpine `openssl-dev`.
#ifndef COPENSSL_H
#define COPENSSL_H

// Without the headers the build stops here with the line that installs them, rather than with a bare
// "file not found" for the first include below.
#if defined(__has_include)
#if !__has_include(<openssl/ssl.h>)
#error "OpenSSL 3's headers are missing (openssl/ssl.h): install them, then build again. Debian/Ubuntu: apt-get install libssl-dev; Fedora/RHEL: dnf install openssl-devel; Alpine: apk add openssl-dev"
#endif
#endif

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/opensslv.h>
#include <stddef.h>
#include <stdint.h>

// MARK: One TLS connection's transport

/// One connection: its `SSL`, the ciphertext OpenSSL may read (`in`, borrowed from the caller for the
/// duration of one call), and the ciphertext OpenSSL wrote (`out`, owned, freed when drained).
typedef struct lsock_tls {
    SSL *ssl;
    const uint8_t *in;
    size_t in_len;
    uint8_t *out;
    size_t out_len;
    size_t out_sent;
    size_t out_cap;
    /// Manual trust: an `LSOCK_TRUST_*` state.
    int trust;
    /// A resumable session handed over by OpenSSL's new-session callback (clients), or NULL.
    SSL_SESSION *new_session;
} lsock_tls;

/// Where a connection's manual trust decision stands (`lsock_tls.trust`).
enum {
    /// Automatic verification: OpenSSL decides.
    LSOCK_TRUST_AUTOMATIC = 0,
    /// The delegate is to be asked; the peer's chain has not been verified.
    LSOCK_TRUST_ASK = 1,
    /// The chain came and waits for the delegate's answer: the verify hook reports no success meanwhile
    /// (a server, which OpenSSL cannot pause, lets its handshake finish once; data waits for the answer).
    LSOCK_TRUST_PENDING = 2,
    LSOCK_TRUST_ACCEPTED = 3,
    LSOCK_TRUST_REJECTED = 4,
};

/// A connection over `ctx`; `server` picks the accept or connect state. NULL if OpenSSL is out of memory.
lsock_tls *lsock_tls_new(SSL_CTX *ctx, int server);
/// Frees the SSL, the output buffer and any held session.
void lsock_tls_free(lsock_tls *tls);
/// Drops the output buffer once everything in it was sent (an idle connection keeps no buffer).
void lsock_tls_output_consumed(lsock_tls *tls, size_t count);

/// Takes the session the new-session callback stored (the caller owns the reference), or NULL.
SSL_SESSION *lsock_tls_take_session(lsock_tls *tls);

// MARK: Contexts

/// A context with the loop's callbacks installed: server name selection (when `server`), the client
/// session hook, renegotiation off, buffers released while idle, partial writes enabled, the TLS 1.3 suites
/// with AES-128-GCM first.
SSL_CTX *lsock_ctx_new(int server);
/// `SSL_CTX_set_min_proto_version` / `max` (macros).
int lsock_ctx_set_versions(SSL_CTX *ctx, int min_version, int max_version);
/// Installs the verify hook that pauses the handshake for the delegate's trust decision (manual trust), with
/// `mode` the `SSL_VERIFY_*` flags: a server asks for a client certificate, and demands one, as its client
/// authentication setting says.
void lsock_ctx_set_manual_trust(SSL_CTX *ctx, int mode);
/// The server name callback's table: `count` names with their contexts. The arrays are copied; the contexts
/// are referenced (`SSL_CTX_up_ref`).
int lsock_ctx_set_sni(SSL_CTX *ctx, const char *const *names, SSL_CTX *const *contexts, int count);
/// The server's ALPN preference list, in wire format (length-prefixed names).
int lsock_ctx_set_alpn_server(SSL_CTX *ctx, const uint8_t *wire, size_t length);
/// `SSL_CTX_set_session_cache_mode`, the TLS 1.3 tickets sent per handshake (none when not `enabled`) and the
/// session id context (macros and functions).
void lsock_ctx_set_server_session_cache(SSL_CTX *ctx, int enabled, size_t tickets, const uint8_t *sid_ctx,
                                        unsigned int sid_length);
/// Builds the current certificate's chain once (`SSL_CTX_build_cert_chain`) and turns off OpenSSL's building
/// it again at every handshake (`SSL_MODE_NO_AUTO_CHAIN`). 1 if built, 0 if auto chain stays on.
int lsock_ctx_build_chain(SSL_CTX *ctx);
/// `SSL_CTX_sess_number` (a macro): how many sessions the context's internal cache holds.
long lsock_ctx_session_count(SSL_CTX *ctx);
/// Adds an extra chain certificate (`SSL_CTX_add1_chain_cert`, a macro).
int lsock_ctx_add_chain_cert(SSL_CTX *ctx, X509 *cert);
/// Adds an extra chain certificate to a connection's own chain (`SSL_add1_chain_cert`).
int lsock_ssl_add_chain_cert(SSL *ssl, X509 *cert);

// MARK: Connections

/// `SSL_set_tlsext_host_name` (a macro): the SNI name a client sends.
int lsock_ssl_set_sni(SSL *ssl, const char *name);
/// Makes the handshake verify `host` (a DNS name, or an IP literal checked against the IP SANs).
int lsock_ssl_set_verify_host(SSL *ssl, const char *host);
/// The negotiated ALPN protocol into `buffer` (NUL-terminated); its length, 0 if none.
int lsock_ssl_alpn(const SSL *ssl, char *buffer, int capacity);
/// The SNI name a server received, or NULL.
const char *lsock_ssl_server_name(const SSL *ssl);

/// `XN_FLAG_RFC2253` (a macro of macros): one-line distinguished names.
static const unsigned long LSOCK_XN_FLAG_RFC2253 = XN_FLAG_RFC2253;

// MARK: Errors

/// Pops OpenSSL's error queue into `buffer` ("reason: ..."), returning the first packed error code (0 if none).
unsigned long lsock_drain_errors(char *buffer, size_t capacity);
/// The reason code part of a packed error (`ERR_GET_REASON`, a macro).
int lsock_error_reason(unsigned long code);
/// The library code part of a packed error (`ERR_GET_LIB`, a macro).
int lsock_error_library(unsigned long code);

// MARK: Trust evaluation

/// Verifies `leaf` with its `chain` against `store`, for `host` (a DNS name or an IP literal; NULL for none),
/// as a client's certificate when `client` (TLS client authentication) else as a server's, as the handshake
/// would. Returns `X509_V_OK` or the verification error (`X509_verify_cert_error_string` names it).
long lsock_verify_chain(X509_STORE *store, X509 *leaf, STACK_OF(X509) *chain, const char *host, int client);
/// `sk_X509_num` / `sk_X509_value` (macros).
int lsock_chain_count(const STACK_OF(X509) *chain);
X509 *lsock_chain_at(const STACK_OF(X509) *chain, int index);
/// A new empty chain; pushes with a reference taken.
STACK_OF(X509) *lsock_chain_new(void);
int lsock_chain_push(STACK_OF(X509) *chain, X509 *cert);
void lsock_chain_free(STACK_OF(X509) *chain);

// MARK: PKCS#12

#include <openssl/kdf.h>
#include <openssl/provider.h>

/// A library context of its own for opening PKCS#12 data, never used for TLS: OpenSSL's default provider and,
/// where its module is installed, the legacy one, which has the ciphers Apple's tools and OpenSSL 1.x
/// encrypt PKCS#12 certificates with (RC2; single DES). Modules are looked for in `modules_dir` (NULL: where
/// OpenSSL looks, `OPENSSL_MODULES` or its built-in directory). NULL if the default provider cannot be loaded.
/// `*legacy` is 1 if the legacy provider loaded, else 0 with OpenSSL's reason written to `failure`.
OSSL_LIB_CTX *lsock_pkcs12_context_new(const char *modules_dir, int *legacy, char *failure, size_t capacity);

/// What `lsock_pkcs12_open` found.
enum {
    LSOCK_PKCS12_OK = 0,
    /// Not DER PKCS#12, cut short, or corrupt.
    LSOCK_PKCS12_MALFORMED = 1,
    /// The integrity check (MAC) failed with the password; without a MAC, the contents did not decrypt.
    LSOCK_PKCS12_WRONG_PASSWORD = 2,
    /// An algorithm the context lacks (`detail` names it).
    LSOCK_PKCS12_UNSUPPORTED = 3,
    /// Opening it would take more key-derivation iterations than allowed (`detail` says which count).
    LSOCK_PKCS12_TOO_MANY_ITERATIONS = 4,
};

/// Decodes DER `data` and opens it with `password` as `PKCS12_parse` does, decrypting in `ctx` (a context from
/// `lsock_pkcs12_context_new`): the private key, the certificate matching it and the other certificates, in
/// the default context and owned by the caller (`*key` and `*cert` NULL when the data holds no key, or no
/// certificate for it). On failure returns the status, with the OpenSSL error that came first in `*error`
/// and a phrase in `detail`: for LSOCK_PKCS12_UNSUPPORTED what uses which algorithm ("the certificates are
/// encrypted with pbeWithSHA1And40BitRC2-CBC, and this OpenSSL has no RC2-40-CBC"), else OpenSSL's reason. Empties the error queue.
/// The MAC's and every encryption's iteration counts (scrypt: N·r·p) are read before their key is derived,
/// and opening stops with LSOCK_PKCS12_TOO_MANY_ITERATIONS before their sum would pass `max_iterations`.
int lsock_pkcs12_open(OSSL_LIB_CTX *ctx, const uint8_t *data, size_t length, const char *password,
                      uint64_t max_iterations, EVP_PKEY **key, X509 **cert, STACK_OF(X509) **chain,
                      unsigned long *error, char *detail, size_t capacity);

#endif
