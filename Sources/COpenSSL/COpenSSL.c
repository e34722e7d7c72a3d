#include "COpenSSL.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <openssl/asn1t.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

// MARK: Process-wide set-up (once)

static BIO_METHOD *lsock_bio_method;
static int lsock_ssl_index = -1;   // SSL ex_data: the connection's lsock_tls
static int lsock_sni_index = -1;   // SSL_CTX ex_data: the server name table
static int lsock_alpn_index = -1;  // SSL_CTX ex_data: the server's ALPN list
static pthread_once_t lsock_once = PTHREAD_ONCE_INIT;

typedef struct {
    int count;
    char **names;
    SSL_CTX **contexts;
} lsock_sni_table;

typedef struct {
    size_t length;
    uint8_t wire[];
} lsock_alpn_list;

static void lsock_sni_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp) {
    (void)parent; (void)ad; (void)idx; (void)argl; (void)argp;
    lsock_sni_table *table = ptr;
    if (!table) return;
    for (int i = 0; i < table->count; i++) {
        free(table->names[i]);
        SSL_CTX_free(table->contexts[i]);
    }
    free(table->names);
    free(table->contexts);
    free(table);
}

static void lsock_plain_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp) {
    (void)parent; (void)ad; (void)idx; (void)argl; (void)argp;
    free(ptr);
}

// MARK: The BIO: ciphertext in from the engine's receive buffer, out into the connection's own buffer

static int lsock_bio_write(BIO *bio, const char *data, int length) {
    lsock_tls *tls = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (!tls || length < 0) return -1;
    size_t need = tls->out_len + (size_t)length;
    if (need > tls->out_cap) {
        // One full record with its overhead fits the first allocation.
        size_t capacity = tls->out_cap ? tls->out_cap * 2 : 16 * 1024 + 512;
        while (capacity < need) capacity *= 2;
        uint8_t *grown = realloc(tls->out, capacity);
        if (!grown) return -1;
        tls->out = grown;
        tls->out_cap = capacity;
    }
    memcpy(tls->out + tls->out_len, data, (size_t)length);
    tls->out_len = need;
    return length;
}

static int lsock_bio_read(BIO *bio, char *buffer, int length) {
    lsock_tls *tls = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (!tls || length < 0) return -1;
    if (tls->in_len == 0) {
        // Nothing buffered: OpenSSL reports SSL_ERROR_WANT_READ and the loop waits for EPOLLIN.
        BIO_set_retry_read(bio);
        return -1;
    }
    size_t count = (size_t)length < tls->in_len ? (size_t)length : tls->in_len;
    memcpy(buffer, tls->in, count);
    tls->in += count;
    tls->in_len -= count;
    return (int)count;
}

static long lsock_bio_ctrl(BIO *bio, int command, long number, void *pointer) {
    (void)number; (void)pointer;
    lsock_tls *tls = BIO_get_data(bio);
    switch (command) {
    case BIO_CTRL_FLUSH:
        return 1;  // Output leaves through the engine's send, which the pump drives.
    case BIO_CTRL_PENDING:
        return tls ? (long)tls->in_len : 0;
    case BIO_CTRL_WPENDING:
        return tls ? (long)(tls->out_len - tls->out_sent) : 0;
    default:
        return 0;
    }
}

static int lsock_bio_create(BIO *bio) {
    BIO_set_init(bio, 1);
    return 1;
}

static int lsock_bio_destroy(BIO *bio) {
    BIO_set_data(bio, NULL);
    return 1;
}

static void lsock_setup(void) {
    lsock_bio_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "loopsocket");
    BIO_meth_set_write(lsock_bio_method, lsock_bio_write);
    BIO_meth_set_read(lsock_bio_method, lsock_bio_read);
    BIO_meth_set_ctrl(lsock_bio_method, lsock_bio_ctrl);
    BIO_meth_set_create(lsock_bio_method, lsock_bio_create);
    BIO_meth_set_destroy(lsock_bio_method, lsock_bio_destroy);
    lsock_ssl_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
    lsock_sni_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, lsock_sni_free);
    lsock_alpn_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, lsock_plain_free);
}

// MARK: Callbacks

static int lsock_new_session(SSL *ssl, SSL_SESSION *session) {
    lsock_tls *tls = SSL_get_ex_data(ssl, lsock_ssl_index);
    if (!tls || !SSL_SESSION_is_resumable(session)) return 0;
    if (tls->new_session) SSL_SESSION_free(tls->new_session);
    tls->new_session = session;
    return 1;  // The reference is ours now.
}

static int lsock_server_name(SSL *ssl, int *alert, void *arg) {
    (void)alert; (void)arg;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    lsock_sni_table *table = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), lsock_sni_index);
    if (!name || !table) return SSL_TLSEXT_ERR_OK;
    const char *dot = strchr(name, '.');
    for (int i = 0; i < table->count; i++) {
        const char *candidate = table->names[i];
        int match = strcasecmp(candidate, name) == 0
            || (candidate[0] == '*' && candidate[1] == '.' && dot && strcasecmp(candidate + 1, dot) == 0);
        if (match) {
            SSL_set_SSL_CTX(ssl, table->contexts[i]);
            return SSL_TLSEXT_ERR_OK;
        }
    }
    return SSL_TLSEXT_ERR_OK;  // Unknown names get the default certificate, as nginx's default server.
}

static int lsock_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *out_length,
                             const unsigned char *in, unsigned int in_length, void *arg) {
    (void)arg;
    lsock_alpn_list *list = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), lsock_alpn_index);
    if (!list) return SSL_TLSEXT_ERR_NOACK;
    unsigned char *selected = NULL;
    if (SSL_select_next_proto(&selected, out_length, list->wire, (unsigned int)list->length, in, in_length)
        == OPENSSL_NPN_NEGOTIATED) {
        *out = selected;
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;  // RFC 7301: no_application_protocol.
}

/// Manual trust: the first call pauses a client's handshake (`SSL_ERROR_WANT_RETRY_VERIFY`) until the
/// delegate answered; the call after the answer returns it. Servers accept here and decide after the
/// handshake, before any application data is taken or sent (OpenSSL cannot pause a server there).
///
/// Fails closed: no call reports success while the delegate has not answered. A client's handshake driven
/// again before the answer pauses again (OpenSSL goes on only when this returns 1 *without* a retry
/// pending); a server asked again while its delegate decides (nothing does that: renegotiation is off, and
/// no post-handshake authentication is requested) refuses.
static int lsock_manual_verify(X509_STORE_CTX *store, void *arg) {
    (void)arg;
    SSL *ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx());
    lsock_tls *tls = ssl ? SSL_get_ex_data(ssl, lsock_ssl_index) : NULL;
    if (!tls) return 0;
    switch (tls->trust) {
    case LSOCK_TRUST_ACCEPTED:
        X509_STORE_CTX_set_error(store, X509_V_OK);
        return 1;
    case LSOCK_TRUST_ASK:
    case LSOCK_TRUST_PENDING:
        if (SSL_is_server(ssl)) {
            if (tls->trust == LSOCK_TRUST_ASK) {
                tls->trust = LSOCK_TRUST_PENDING;
                return 1;  // The engine asks once the handshake is done, before any data.
            }
        } else if (SSL_set_retry_verify(ssl) == 1) {
            tls->trust = LSOCK_TRUST_PENDING;
            return 1;  // Paused, not accepted.
        }
        X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
        return 0;
    default:
        // Rejected, or a state this hook does not know: refused.
        X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
        return 0;
    }
}

// MARK: Connections

lsock_tls *lsock_tls_new(SSL_CTX *ctx, int server) {
    pthread_once(&lsock_once, lsock_setup);
    lsock_tls *tls = calloc(1, sizeof(lsock_tls));
    if (!tls) return NULL;
    tls->ssl = SSL_new(ctx);
    BIO *bio = tls->ssl ? BIO_new(lsock_bio_method) : NULL;
    if (!bio) {
        SSL_free(tls->ssl);
        free(tls);
        return NULL;
    }
    BIO_set_data(bio, tls);
    SSL_set_bio(tls->ssl, bio, bio);
    SSL_set_ex_data(tls->ssl, lsock_ssl_index, tls);
    if (server) SSL_set_accept_state(tls->ssl); else SSL_set_connect_state(tls->ssl);
    return tls;
}

void lsock_tls_free(lsock_tls *tls) {
    if (!tls) return;
    SSL_free(tls->ssl);
    free(tls->out);
    if (tls->new_session) SSL_SESSION_free(tls->new_session);
    free(tls);
}

void lsock_tls_output_consumed(lsock_tls *tls, size_t count) {
    tls->out_sent += count;
    if (tls->out_sent >= tls->out_len) {
        free(tls->out);
        tls->out = NULL;
        tls->out_len = 0;
        tls->out_sent = 0;
        tls->out_cap = 0;
    }
}

SSL_SESSION *lsock_tls_take_session(lsock_tls *tls) {
    SSL_SESSION *session = tls->new_session;
    tls->new_session = NULL;
    return session;
}

// MARK: Contexts

SSL_CTX *lsock_ctx_new(int server) {
    pthread_once(&lsock_once, lsock_setup);
    SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (!ctx) return NULL;
    uint64_t options = SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION;
    if (server) options |= SSL_OP_CIPHER_SERVER_PREFERENCE;
    SSL_CTX_set_options(ctx, options);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE
                              | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* TLS 1.3 suites: OpenSSL's three, AES-128-GCM first (OpenSSL puts AES-256-GCM first). Its SHA-256 key
     * schedule and records cost less (a full handshake about 3% fewer instructions), and its 128-bit level
     * is the key exchange's (X25519, P-256); browsers offer it first too. */
    SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256");
    if (server) {
        SSL_CTX_set_tlsext_servername_callback(ctx, lsock_server_name);
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(ctx, lsock_new_session);
    }
    return ctx;
}

int lsock_ctx_set_versions(SSL_CTX *ctx, int min_version, int max_version) {
    if (!SSL_CTX_set_min_proto_version(ctx, min_version)) return 0;
    return (int)SSL_CTX_set_max_proto_version(ctx, max_version);
}

void lsock_ctx_set_manual_trust(SSL_CTX *ctx, int mode) {
    // A client always takes the server's chain to its delegate; a server only asks for a client's as told.
    SSL_CTX_set_verify(ctx, mode, NULL);
    SSL_CTX_set_cert_verify_callback(ctx, lsock_manual_verify, NULL);
}

int lsock_ctx_set_sni(SSL_CTX *ctx, const char *const *names, SSL_CTX *const *contexts, int count) {
    lsock_sni_table *table = calloc(1, sizeof(lsock_sni_table));
    if (!table) return 0;
    table->names = calloc((size_t)count, sizeof(char *));
    table->contexts = calloc((size_t)count, sizeof(SSL_CTX *));
    if (!table->names || !table->contexts) {
        lsock_sni_free(NULL, table, NULL, 0, 0, NULL);
        return 0;
    }
    for (int i = 0; i < count; i++) {
        table->names[i] = strdup(names[i]);
        SSL_CTX_up_ref(contexts[i]);
        table->contexts[i] = contexts[i];
        table->count = i + 1;
    }
    return SSL_CTX_set_ex_data(ctx, lsock_sni_index, table);
}

int lsock_ctx_set_alpn_server(SSL_CTX *ctx, const uint8_t *wire, size_t length) {
    lsock_alpn_list *list = malloc(sizeof(lsock_alpn_list) + length);
    if (!list) return 0;
    list->length = length;
    memcpy(list->wire, wire, length);
    if (!SSL_CTX_set_ex_data(ctx, lsock_alpn_index, list)) {
        free(list);
        return 0;
    }
    SSL_CTX_set_alpn_select_cb(ctx, lsock_alpn_select, NULL);
    return 1;
}

void lsock_ctx_set_server_session_cache(SSL_CTX *ctx, int enabled, size_t tickets, const uint8_t *sid_ctx,
                                        unsigned int sid_length) {
    /* Clients that take tickets (TLS 1.3, and TLS 1.2 with RFC 5077) resume from stateless tickets and
     * leave nothing in the internal cache (OpenSSL gives them an empty session id); only TLS 1.2 clients
     * without ticket support are stored, up to OpenSSL's bound of 20,480 sessions. */
    SSL_CTX_set_session_cache_mode(ctx, enabled ? SSL_SESS_CACHE_SERVER : SSL_SESS_CACHE_OFF);
    if (!enabled) {
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
        tickets = 0;
    }
    /* TLS 1.3 tickets per handshake (OpenSSL's default is two). Each costs OpenSSL 3.0 about 170,000
     * instructions (the session serialised, encrypted and MACed, a copy of the session for every ticket
     * after the first), about 6% of a full handshake. */
    SSL_CTX_set_num_tickets(ctx, tickets);
    SSL_CTX_set_session_id_context(ctx, sid_ctx, sid_length);
}

int lsock_ctx_build_chain(SSL_CTX *ctx) {
    /* What OpenSSL's "auto chain" would send (the chain it can build from the context's store), built once
     * here instead of at every handshake (an X509_STORE_CTX and a verification per handshake otherwise).
     * A leaf that chains to nothing gets an empty chain, as auto chain would send. */
    int built = (int)SSL_CTX_build_cert_chain(ctx, SSL_BUILD_CHAIN_FLAG_IGNORE_ERROR | SSL_BUILD_CHAIN_FLAG_CLEAR_ERROR);
    if (built <= 0) {
        ERR_clear_error();
        return 0;  // Auto chain stays on: the handshake builds it as before.
    }
    SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN);
    return 1;
}

long lsock_ctx_session_count(SSL_CTX *ctx) {
    return SSL_CTX_sess_number(ctx);
}

int lsock_ctx_add_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return (int)SSL_CTX_add1_chain_cert(ctx, cert);
}

int lsock_ssl_add_chain_cert(SSL *ssl, X509 *cert) {
    return (int)SSL_add1_chain_cert(ssl, cert);
}

// MARK: Connections

static int lsock_is_ip(const char *host) {
    unsigned char address[16];
    return inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1;
}

int lsock_ssl_set_sni(SSL *ssl, const char *name) {
    if (lsock_is_ip(name)) return 1;  // RFC 6066: literal addresses are not sent as SNI.
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/// The one host check, for the handshake and for `TLSTrust.evaluate()` alike: an IP literal against the IP
/// SANs, else the DNS name with wildcards only as a whole left-most label (`*.example.com`, never
/// `f*.example.com`), as browsers and RFC 9525 allow.
static int lsock_param_set_host(X509_VERIFY_PARAM *param, const char *host) {
    if (lsock_is_ip(host)) return X509_VERIFY_PARAM_set1_ip_asc(param, host);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return X509_VERIFY_PARAM_set1_host(param, host, 0);
}

int lsock_ssl_set_verify_host(SSL *ssl, const char *host) {
    return lsock_param_set_host(SSL_get0_param(ssl), host);
}

int lsock_ssl_alpn(const SSL *ssl, char *buffer, int capacity) {
    const unsigned char *data = NULL;
    unsigned int length = 0;
    SSL_get0_alpn_selected(ssl, &data, &length);
    if (!data || length == 0 || (int)length >= capacity) return 0;
    memcpy(buffer, data, length);
    buffer[length] = 0;
    return (int)length;
}

const char *lsock_ssl_server_name(const SSL *ssl) {
    return SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
}

// MARK: Errors

unsigned long lsock_drain_errors(char *buffer, size_t capacity) {
    unsigned long first = 0, code;
    if (capacity) buffer[0] = 0;
    while ((code = ERR_get_error()) != 0) {
        if (first) continue;
        first = code;
        const char *reason = ERR_reason_error_string(code);
        if (capacity) snprintf(buffer, capacity, "%s", reason ? reason : "unknown OpenSSL error");
    }
    return first;
}

int lsock_error_reason(unsigned long code) { return ERR_GET_REASON(code); }
int lsock_error_library(unsigned long code) { return ERR_GET_LIB(code); }

// MARK: Trust evaluation

long lsock_verify_chain(X509_STORE *store, X509 *leaf, STACK_OF(X509) *chain, const char *host, int client) {
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    if (!ctx) return X509_V_ERR_OUT_OF_MEM;
    // The purpose the handshake checks (a server checks its client's for "ssl_client": clientAuth).
    if (!X509_STORE_CTX_init(ctx, store, leaf, chain)
        || !X509_STORE_CTX_set_default(ctx, client ? "ssl_client" : "ssl_server")
        || (host && !lsock_param_set_host(X509_STORE_CTX_get0_param(ctx), host))) {
        X509_STORE_CTX_free(ctx);
        ERR_clear_error();
        return X509_V_ERR_UNSPECIFIED;
    }
    long result = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
    if (result == X509_V_OK && X509_STORE_CTX_get_error(ctx) != X509_V_OK) result = X509_STORE_CTX_get_error(ctx);
    X509_STORE_CTX_free(ctx);
    return result;
}

int lsock_chain_count(const STACK_OF(X509) *chain) { return chain ? sk_X509_num(chain) : 0; }
X509 *lsock_chain_at(const STACK_OF(X509) *chain, int index) { return sk_X509_value(chain, index); }
STACK_OF(X509) *lsock_chain_new(void) { return sk_X509_new_null(); }
int lsock_chain_push(STACK_OF(X509) *chain, X509 *cert) {
    if (!X509_up_ref(cert)) return 0;
    if (!sk_X509_push(chain, cert)) {
        X509_free(cert);
        return 0;
    }
    return 1;
}
void lsock_chain_free(STACK_OF(X509) *chain) { sk_X509_pop_free(chain, X509_free); }

// MARK: PKCS#12

/// Empties the error queue, writing the first error's reason, and its data when it has some (a module's file
/// name and the loader's complaint), to `buffer` unless something is written there already; returns that
/// error's packed code.
static unsigned long lsock_pkcs12_drain(char *buffer, size_t capacity) {
    unsigned long first = 0, code;
    const char *data = NULL;
    int flags = 0;
    while ((code = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        if (first) continue;
        first = code;
        if (!capacity || buffer[0]) continue;
        const char *reason = ERR_reason_error_string(code);
        if (!reason) reason = "unknown OpenSSL error";
        int has_data = (flags & ERR_TXT_STRING) && data && *data;
        snprintf(buffer, capacity, has_data ? "%s (%s)" : "%s", reason, has_data ? data : "");
    }
    return first;
}

OSSL_LIB_CTX *lsock_pkcs12_context_new(const char *modules_dir, int *legacy, char *failure, size_t capacity) {
    *legacy = 0;
    if (capacity) failure[0] = 0;
    OSSL_LIB_CTX *ctx = OSSL_LIB_CTX_new();
    if (!ctx) return NULL;
    if ((modules_dir && !OSSL_PROVIDER_set_default_search_path(ctx, modules_dir))
        || !OSSL_PROVIDER_load(ctx, "default")) {
        OSSL_LIB_CTX_free(ctx);
        ERR_clear_error();
        return NULL;
    }
    // Loaded providers live as long as the context: nothing to keep or unload.
    if (OSSL_PROVIDER_load(ctx, "legacy")) *legacy = 1;
    else lsock_pkcs12_drain(failure, capacity);
    return ctx;
}

/// 1 if the algorithm `name` (a cipher, digest or KDF: `kind` 'c', 'd' or 'k') can be fetched from `ctx`.
static int lsock_pkcs12_has(OSSL_LIB_CTX *ctx, int kind, const char *name) {
    if (!name) return 0;
    int found = 0;
    ERR_set_mark();
    if (kind == 'c') {
        EVP_CIPHER *cipher = EVP_CIPHER_fetch(ctx, name, NULL);
        found = cipher != NULL;
        EVP_CIPHER_free(cipher);
    } else if (kind == 'd') {
        EVP_MD *md = EVP_MD_fetch(ctx, name, NULL);
        found = md != NULL;
        EVP_MD_free(md);
    } else {
        EVP_KDF *kdf = EVP_KDF_fetch(ctx, name, NULL);
        found = kdf != NULL;
        EVP_KDF_free(kdf);
    }
    ERR_pop_to_mark();
    return found;
}

/// What PBES2 (RFC 8018) parameters `params` need that `ctx` lacks, its cipher or its key derivation (PBKDF2
/// with an HMAC, or scrypt), written to `missing`: 1 if something, 0 if nothing or if the parameters do not
/// decode.
static int lsock_pkcs12_pbes2_unavailable(OSSL_LIB_CTX *ctx, const ASN1_TYPE *params, char *missing, size_t capacity) {
    PBE2PARAM *pbe2 = params && params->type == V_ASN1_SEQUENCE
        ? ASN1_TYPE_unpack_sequence(ASN1_ITEM_rptr(PBE2PARAM), params) : NULL;
    if (!pbe2) return 0;
    int found = 0;
    int kdf_nid = OBJ_obj2nid(pbe2->keyfunc->algorithm);
    if (!lsock_pkcs12_has(ctx, 'c', OBJ_nid2sn(OBJ_obj2nid(pbe2->encryption->algorithm)))) {
        OBJ_obj2txt(missing, (int)capacity, pbe2->encryption->algorithm, 0);
        found = 1;
    } else if (kdf_nid == NID_id_pbkdf2) {
        const ASN1_TYPE *kdf_params = pbe2->keyfunc->parameter;
        PBKDF2PARAM *kdf = kdf_params && kdf_params->type == V_ASN1_SEQUENCE
            ? ASN1_TYPE_unpack_sequence(ASN1_ITEM_rptr(PBKDF2PARAM), kdf_params) : NULL;
        int prf = kdf && kdf->prf ? OBJ_obj2nid(kdf->prf->algorithm) : NID_hmacWithSHA1;  // RFC 8018's default
        int md_nid = NID_undef;
        if (kdf && (!EVP_PBE_find_ex(EVP_PBE_TYPE_PRF, prf, NULL, &md_nid, NULL, NULL)
                    || !lsock_pkcs12_has(ctx, 'd', OBJ_nid2sn(md_nid)))) {
            if (kdf->prf) OBJ_obj2txt(missing, (int)capacity, kdf->prf->algorithm, 0);
            else snprintf(missing, capacity, "%s", OBJ_nid2ln(prf));
            found = 1;
        }
        PBKDF2PARAM_free(kdf);
    } else if (kdf_nid != NID_id_scrypt || !lsock_pkcs12_has(ctx, 'k', "SCRYPT")) {
        OBJ_obj2txt(missing, (int)capacity, pbe2->keyfunc->algorithm, 0);
        found = 1;
    }
    PBE2PARAM_free(pbe2);
    return found;
}

/// 1 if `ctx` lacks what the password-based encryption `alg` needs, described in `detail` after `what` ("the
/// certificates are encrypted with pbeWithSHA1And40BitRC2-CBC, and this OpenSSL has no RC2-40-CBC").
static int lsock_pkcs12_pbe_unavailable(OSSL_LIB_CTX *ctx, const X509_ALGOR *alg, const char *what,
                                        char *detail, size_t capacity) {
    if (!alg) return 0;
    char scheme[80], missing[80];
    OBJ_obj2txt(scheme, sizeof scheme, alg->algorithm, 0);
    int nid = OBJ_obj2nid(alg->algorithm), found = 0;
    if (nid == NID_pbes2) {
        found = lsock_pkcs12_pbes2_unavailable(ctx, alg->parameter, missing, sizeof missing);
    } else {
        // PBES1 and PKCS#12's own schemes: the OID names the cipher and the digest.
        int cipher_nid = NID_undef, md_nid = NID_undef;
        const char *name = NULL;
        if (!EVP_PBE_find_ex(EVP_PBE_TYPE_OUTER, nid, &cipher_nid, &md_nid, NULL, NULL)) {
            name = "an unknown scheme";
        } else if (cipher_nid != NID_undef && !lsock_pkcs12_has(ctx, 'c', OBJ_nid2sn(cipher_nid))) {
            name = OBJ_nid2sn(cipher_nid);
        } else if (md_nid != NID_undef && !lsock_pkcs12_has(ctx, 'd', OBJ_nid2sn(md_nid))) {
            name = OBJ_nid2sn(md_nid);
        }
        if (name) snprintf(missing, sizeof missing, "%s", name);
        found = name != NULL;
    }
    if (found && capacity) snprintf(detail, capacity, "%s %s, and this OpenSSL has no %s", what, scheme, missing);
    return found;
}

// MARK: PKCS#12 iteration counts

/// The iterations an ASN.1 count asks for, read as OpenSSL's key derivations read it (absent: 1); UINT64_MAX
/// when it is negative or does not fit, so that it is refused.
static uint64_t lsock_pkcs12_count(const ASN1_INTEGER *value) {
    uint64_t count = 1;
    if (value && !ASN1_INTEGER_get_uint64(&count, value)) {
        ERR_clear_error();
        return UINT64_MAX;
    }
    return count ? count : 1;
}

static uint64_t lsock_pkcs12_product(uint64_t a, uint64_t b) {
    uint64_t product;
    return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

/// The work of the key derivation `kdf` (PBES2's or PBMAC1's) names: PBKDF2's iteration count, or scrypt's
/// N·r·p (each unit a few hash compressions' worth, as one PBKDF2 iteration is). 0 when its parameters do
/// not decode: OpenSSL then derives nothing either.
static uint64_t lsock_pkcs12_kdf_cost(const X509_ALGOR *kdf) {
    const ASN1_TYPE *params = kdf ? kdf->parameter : NULL;
    if (!params || params->type != V_ASN1_SEQUENCE) return 0;
    uint64_t cost = 0;
    int nid = OBJ_obj2nid(kdf->algorithm);
    if (nid == NID_id_pbkdf2) {
        PBKDF2PARAM *pbkdf2 = ASN1_TYPE_unpack_sequence(ASN1_ITEM_rptr(PBKDF2PARAM), params);
        if (pbkdf2) cost = lsock_pkcs12_count(pbkdf2->iter);
        PBKDF2PARAM_free(pbkdf2);
    } else if (nid == NID_id_scrypt) {
        SCRYPT_PARAMS *scrypt = ASN1_TYPE_unpack_sequence(ASN1_ITEM_rptr(SCRYPT_PARAMS), params);
        if (scrypt) {
            cost = lsock_pkcs12_product(lsock_pkcs12_count(scrypt->costParameter),
                                        lsock_pkcs12_product(lsock_pkcs12_count(scrypt->blockSize),
                                                             lsock_pkcs12_count(scrypt->parallelizationParameter)));
        }
        SCRYPT_PARAMS_free(scrypt);
    }
    ERR_clear_error();
    return cost;
}

/// The iterations decrypting with `alg` derives its key with: PBES2's key derivation's, else the count in
/// PKCS#12's and PBES1's own parameters (salt and count). 0 when they do not decode.
static uint64_t lsock_pkcs12_pbe_cost(const X509_ALGOR *alg) {
    const ASN1_TYPE *params = alg ? alg->parameter : NULL;
    if (!params || params->type != V_ASN1_SEQUENCE) return 0;
    uint64_t cost = 0;
    if (OBJ_obj2nid(alg->algorithm) == NID_pbes2) {
        PBE2PARAM *pbe2 = ASN1_TYPE_unpack_sequence(ASN1_ITEM_rptr(PBE2PARAM), params);
        if (pbe2) cost = lsock_pkcs12_kdf_cost(pbe2->keyfunc);
        PBE2PARAM_free(pbe2);
    } else {
        PBEPARAM *pbe = ASN1_TYPE_unpack_sequence(ASN1_ITEM_rptr(PBEPARAM), params);
        if (pbe) cost = lsock_pkcs12_count(pbe->iter);
        PBEPARAM_free(pbe);
    }
    ERR_clear_error();
    return cost;
}

/// PBMAC1's parameters (RFC 8018, A.5): the key derivation and the MAC. OpenSSL 3.0's headers do not declare them.
typedef struct {
    X509_ALGOR *kdf;
    X509_ALGOR *scheme;
} lsock_pbmac1_params;

ASN1_SEQUENCE(lsock_pbmac1_params) = {
    ASN1_SIMPLE(lsock_pbmac1_params, kdf, X509_ALGOR),
    ASN1_SIMPLE(lsock_pbmac1_params, scheme, X509_ALGOR),
} static_ASN1_SEQUENCE_END(lsock_pbmac1_params)

/// The iterations checking `p12`'s MAC derives its key with: the MacData's count, or for PBMAC1 (RFC 9579,
/// whose MacData count is unused) its PBKDF2's.
static uint64_t lsock_pkcs12_mac_cost(const PKCS12 *p12) {
    const X509_ALGOR *alg = NULL;
    const ASN1_INTEGER *iterations = NULL;
    PKCS12_get0_mac(NULL, &alg, NULL, &iterations, p12);
    if (!alg || OBJ_obj2nid(alg->algorithm) != NID_pbmac1) return lsock_pkcs12_count(iterations);
    const ASN1_TYPE *params = alg->parameter;
    lsock_pbmac1_params *pbmac1 = params && params->type == V_ASN1_SEQUENCE
        ? ASN1_TYPE_unpack_sequence(ASN1_ITEM_rptr(lsock_pbmac1_params), params) : NULL;
    uint64_t cost = pbmac1 ? lsock_pkcs12_kdf_cost(pbmac1->kdf) : 0;
    ASN1_item_free((ASN1_VALUE *)pbmac1, ASN1_ITEM_rptr(lsock_pbmac1_params));
    ERR_clear_error();
    return cost;
}

/// One PKCS#12 structure being opened.
typedef struct {
    OSSL_LIB_CTX *ctx;
    /// NULL for no password, which PKCS#12 tells from an empty one.
    const char *password;
    /// Whether a MAC vouched for the password (else a failed decryption may mean a wrong one).
    int mac_checked;
    EVP_PKEY *key;
    STACK_OF(X509) *certificates;
    char *detail;
    size_t capacity;
    /// The iterations the file may still cost, of `max_iterations`.
    uint64_t iterations_left;
    uint64_t max_iterations;
} lsock_pkcs12_reader;

/// Charges the `count` iterations of a key derivation about to run for `what`: LSOCK_PKCS12_OK, or
/// LSOCK_PKCS12_TOO_MANY_ITERATIONS (with why in `detail`) if that would pass the limit, before any of it runs.
static int lsock_pkcs12_spend(lsock_pkcs12_reader *r, uint64_t count, const char *what) {
    if (count <= r->iterations_left) {
        r->iterations_left -= count;
        return LSOCK_PKCS12_OK;
    }
    if (!r->capacity) return LSOCK_PKCS12_TOO_MANY_ITERATIONS;
    uint64_t spent = r->max_iterations - r->iterations_left;
    char asked[32] = "an unreadable number of";
    if (count != UINT64_MAX) snprintf(asked, sizeof asked, "%" PRIu64, count);
    if (spent) {
        snprintf(r->detail, r->capacity, "%s takes %s key-derivation iterations, after %" PRIu64
                 ", past the limit of %" PRIu64 " for the whole file", what, asked, spent, r->max_iterations);
    } else {
        snprintf(r->detail, r->capacity, "%s takes %s key-derivation iterations, past the limit of %" PRIu64,
                 what, asked, r->max_iterations);
    }
    return LSOCK_PKCS12_TOO_MANY_ITERATIONS;
}

/// Checks the MAC, if there is one, and settles which password the contents are encrypted with.
static int lsock_pkcs12_check_mac(lsock_pkcs12_reader *r, PKCS12 *p12) {
    int empty = !r->password || !*r->password;
    if (!PKCS12_mac_present(p12)) {
        if (empty) r->password = NULL;
        return LSOCK_PKCS12_OK;
    }
    r->mac_checked = 1;
    uint64_t cost = lsock_pkcs12_mac_cost(p12);
    int status = lsock_pkcs12_spend(r, cost, "the integrity check (MAC)");
    if (status != LSOCK_PKCS12_OK) return status;
    // As PKCS12_parse: an empty password is either no password or the empty one, whichever the MAC takes.
    if (empty ? PKCS12_verify_mac(p12, NULL, 0) : PKCS12_verify_mac(p12, r->password, -1)) {
        if (empty) r->password = NULL;
        return LSOCK_PKCS12_OK;
    }
    if (empty && (status = lsock_pkcs12_spend(r, cost, "the integrity check (MAC), with the empty password")) != LSOCK_PKCS12_OK) {
        return status;
    }
    if (empty && PKCS12_verify_mac(p12, "", 0)) {
        r->password = "";
        return LSOCK_PKCS12_OK;
    }
    const X509_ALGOR *mac = NULL;
    PKCS12_get0_mac(NULL, &mac, NULL, NULL, p12);
    int mac_nid = mac ? OBJ_obj2nid(mac->algorithm) : NID_undef;
    // PBMAC1 (RFC 9579) names no digest of its own: OpenSSL checks it from 3.4 on, and cannot before.
    int unavailable = mac_nid == NID_pbmac1 ? OpenSSL_version_num() < 0x30400000UL
        : mac && !lsock_pkcs12_has(r->ctx, 'd', OBJ_nid2sn(mac_nid));
    if (unavailable) {
        char digest[80];
        OBJ_obj2txt(digest, sizeof digest, mac->algorithm, 0);
        if (r->capacity) snprintf(r->detail, r->capacity, "the integrity check (MAC) uses %s, which this OpenSSL does not have", digest);
        return LSOCK_PKCS12_UNSUPPORTED;
    }
    ERR_raise(ERR_LIB_PKCS12, PKCS12_R_MAC_VERIFY_FAILURE);
    if (r->capacity) snprintf(r->detail, r->capacity, "its integrity check (MAC) failed");
    return LSOCK_PKCS12_WRONG_PASSWORD;
}

/// What contents that decrypted to nothing readable, or not at all, say: damage when a MAC vouched for the
/// password, else most likely a wrong password.
static int lsock_pkcs12_unreadable(lsock_pkcs12_reader *r) {
    if (r->mac_checked) return LSOCK_PKCS12_MALFORMED;
    if (r->capacity) snprintf(r->detail, r->capacity, "the contents do not decrypt (the data has no MAC to check it)");
    return LSOCK_PKCS12_WRONG_PASSWORD;
}

/// Why decrypting `what`, encrypted with `alg`, failed: an algorithm the context lacks, else a wrong password
/// when no MAC vouched for it, else damaged data.
static int lsock_pkcs12_decryption_failed(lsock_pkcs12_reader *r, const X509_ALGOR *alg, const char *what) {
    if (lsock_pkcs12_pbe_unavailable(r->ctx, alg, what, r->detail, r->capacity)) return LSOCK_PKCS12_UNSUPPORTED;
    return lsock_pkcs12_unreadable(r);
}

/// Takes the first key and every X.509 certificate from `bags`, as PKCS12_parse does. Decryption happens in
/// the PKCS#12 context; the key and certificates are decoded in the default one, TLS's.
static int lsock_pkcs12_read_bags(lsock_pkcs12_reader *r, const STACK_OF(PKCS12_SAFEBAG) *bags) {
    for (int i = 0; i < sk_PKCS12_SAFEBAG_num(bags); i++) {
        const PKCS12_SAFEBAG *bag = sk_PKCS12_SAFEBAG_value(bags, i);
        int type = PKCS12_SAFEBAG_get_nid(bag);
        if ((type == NID_keyBag || type == NID_pkcs8ShroudedKeyBag) && !r->key) {
            PKCS8_PRIV_KEY_INFO *decrypted = NULL;
            const PKCS8_PRIV_KEY_INFO *p8 = PKCS12_SAFEBAG_get0_p8inf(bag);
            if (type == NID_pkcs8ShroudedKeyBag) {
                const X509_ALGOR *alg = NULL;
                X509_SIG_get0(PKCS12_SAFEBAG_get0_pkcs8(bag), &alg, NULL);
                int status = lsock_pkcs12_spend(r, lsock_pkcs12_pbe_cost(alg), "the private key's encryption");
                if (status != LSOCK_PKCS12_OK) return status;
                p8 = decrypted = PKCS12_decrypt_skey_ex(bag, r->password, -1, r->ctx, NULL);
                if (!p8) return lsock_pkcs12_decryption_failed(r, alg, "the private key is encrypted with");
            }
            r->key = p8 ? EVP_PKCS82PKEY(p8) : NULL;
            const ASN1_OBJECT *algorithm = NULL;
            if (!r->key && p8) PKCS8_pkey_get0(&algorithm, NULL, NULL, NULL, p8);
            PKCS8_PRIV_KEY_INFO_free(decrypted);
            if (!r->key) {
                int known = algorithm && OBJ_obj2nid(algorithm) != NID_undef;
                EVP_KEYMGMT *manager = known ? EVP_KEYMGMT_fetch(NULL, OBJ_nid2sn(OBJ_obj2nid(algorithm)), NULL) : NULL;
                EVP_KEYMGMT_free(manager);
                if (!algorithm || manager) return lsock_pkcs12_unreadable(r);
                char name[80];
                OBJ_obj2txt(name, sizeof name, algorithm, 0);
                if (r->capacity) snprintf(r->detail, r->capacity, "the private key is a %s key, which this OpenSSL cannot read", name);
                return LSOCK_PKCS12_UNSUPPORTED;
            }
        } else if (type == NID_certBag && PKCS12_SAFEBAG_get_bag_nid(bag) == NID_x509Certificate) {
            X509 *certificate = PKCS12_SAFEBAG_get1_cert(bag);
            if (!certificate || !sk_X509_push(r->certificates, certificate)) {
                X509_free(certificate);
                return LSOCK_PKCS12_MALFORMED;
            }
        } else if (type == NID_safeContentsBag) {
            int status = lsock_pkcs12_read_bags(r, PKCS12_SAFEBAG_get0_safes(bag));
            if (status != LSOCK_PKCS12_OK) return status;
        }
        // Other bags (secrets, CRLs, SDSI certificates) are not part of an identity.
    }
    return LSOCK_PKCS12_OK;
}

/// Reads every content of `p12`: plain ones, and encrypted ones (the certificates, as every tool writes them).
static int lsock_pkcs12_read(lsock_pkcs12_reader *r, PKCS12 *p12) {
    STACK_OF(PKCS7) *contents = PKCS12_unpack_authsafes(p12);
    if (!contents) return LSOCK_PKCS12_MALFORMED;
    int status = LSOCK_PKCS12_OK;
    for (int i = 0; status == LSOCK_PKCS12_OK && i < sk_PKCS7_num(contents); i++) {
        PKCS7 *p7 = sk_PKCS7_value(contents, i);
        STACK_OF(PKCS12_SAFEBAG) *bags = NULL;
        int type = OBJ_obj2nid(p7->type);
        if (type == NID_pkcs7_data) {
            bags = PKCS12_unpack_p7data(p7);
            if (!bags) status = LSOCK_PKCS12_MALFORMED;
        } else if (type == NID_pkcs7_encrypted) {
            const X509_ALGOR *alg = p7->d.encrypted && p7->d.encrypted->enc_data
                ? p7->d.encrypted->enc_data->algorithm : NULL;
            status = lsock_pkcs12_spend(r, lsock_pkcs12_pbe_cost(alg), "the certificates' encryption");
            // Decrypted in the context `p7` inherited from `p12`: the PKCS#12 one.
            if (status == LSOCK_PKCS12_OK && !(bags = PKCS12_unpack_p7encdata(p7, r->password, -1))) {
                status = lsock_pkcs12_decryption_failed(r, alg, "the certificates are encrypted with");
            }
        }
        // Contents enveloped for a public key (no tool writes them for identities) are skipped, as OpenSSL does.
        if (bags) status = lsock_pkcs12_read_bags(r, bags);
        sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
    }
    sk_PKCS7_pop_free(contents, PKCS7_free);
    return status;
}

int lsock_pkcs12_open(OSSL_LIB_CTX *ctx, const uint8_t *data, size_t length, const char *password,
                      uint64_t max_iterations, EVP_PKEY **key, X509 **cert, STACK_OF(X509) **chain,
                      unsigned long *error, char *detail, size_t capacity) {
    *key = NULL;
    *cert = NULL;
    *chain = NULL;
    *error = 0;
    if (capacity) detail[0] = 0;
    if (!data || length == 0) {
        if (capacity) snprintf(detail, capacity, "there is no data");
        return LSOCK_PKCS12_MALFORMED;
    }
    ERR_clear_error();
    // Made in `ctx` before decoding into it, so that the decoded contents keep `ctx`: their decryption
    // fetches its ciphers and digests from there, and the default context (TLS's) never needs RC2.
    PKCS12 *p12 = length <= LONG_MAX ? PKCS12_init_ex(NID_pkcs7_data, ctx, NULL) : NULL;
    const unsigned char *cursor = data;
    if (!p12 || !d2i_PKCS12(&p12, &cursor, (long)length)) {
        PKCS12_free(p12);  // NULL when d2i failed: it frees what it was given
        *error = lsock_pkcs12_drain(detail, capacity);
        return LSOCK_PKCS12_MALFORMED;
    }
    lsock_pkcs12_reader r = {ctx, password, 0, NULL, sk_X509_new_null(), detail, capacity, max_iterations, max_iterations};
    int status = r.certificates ? lsock_pkcs12_check_mac(&r, p12) : LSOCK_PKCS12_MALFORMED;
    if (status == LSOCK_PKCS12_OK) status = lsock_pkcs12_read(&r, p12);
    PKCS12_free(p12);
    if (status != LSOCK_PKCS12_OK) {
        EVP_PKEY_free(r.key);
        sk_X509_pop_free(r.certificates, X509_free);
        *error = lsock_pkcs12_drain(detail, capacity);
        return status;
    }
    ERR_clear_error();
    // The leaf is the first certificate that matches the key; the others follow it in the order read.
    for (int i = 0; r.key && i < sk_X509_num(r.certificates); i++) {
        X509 *candidate = sk_X509_value(r.certificates, i);
        ERR_set_mark();
        int match = X509_check_private_key(candidate, r.key);
        ERR_pop_to_mark();
        if (match) {
            *cert = sk_X509_delete(r.certificates, i);
            break;
        }
    }
    *key = r.key;
    *chain = r.certificates;
    return LSOCK_PKCS12_OK;
}
