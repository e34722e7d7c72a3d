#!/usr/bin/env python3
"""Makes the throwaway test CA and certificates the TLS tests use (committed; run again only to change them).

Everything here is for tests on loopback and must never be trusted anywhere else. ECDSA P-256 keys,
valid for 100 years, except `expired.pem`. Needs Python's `cryptography` package and the `openssl` tool.
Apple-style `.p12` files (RC2-40 and 3DES) are made by the tests themselves, with `openssl pkcs12 -legacy`.
"""
import datetime
import ipaddress
import subprocess
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
LONG = datetime.timedelta(days=36500)


def key():
    return ec.generate_private_key(ec.SECP256R1())


def name(cn):
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "EpollLoop test CA - never trust"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def cert(subject_key, cn, issuer_key, issuer_name, ca=False, sans=(), client=False,
         start=NOW - datetime.timedelta(days=1), end=NOW + LONG, path_len=None):
    builder = (x509.CertificateBuilder()
               .subject_name(name(cn)).issuer_name(issuer_name or name(cn))
               .public_key(subject_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=path_len), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
    else:
        builder = builder.add_extension(x509.ExtendedKeyUsage(
            [ExtendedKeyUsageOID.CLIENT_AUTH] if client else [ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    if sans:
        entries = []
        for san in sans:
            try:
                entries.append(x509.IPAddress(ipaddress.ip_address(san)))
            except ValueError:
                entries.append(x509.DNSName(san))
        builder = builder.add_extension(x509.SubjectAlternativeName(entries), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def write(filename, *items):
    with open(filename, "wb") as f:
        for item in items:
            if isinstance(item, x509.Certificate):
                f.write(item.public_bytes(serialization.Encoding.PEM))
            else:
                f.write(item.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))


ca_key = key()
ca = cert(ca_key, "EpollLoop Test Root", ca_key, None, ca=True)
write("ca.pem", ca)
write("ca.key", ca_key)

inter_key = key()
inter = cert(inter_key, "EpollLoop Test Intermediate", ca_key, ca.subject, ca=True, path_len=0)

localhost = ("localhost", "127.0.0.1", "::1")
server_key = key()
write("server.pem", cert(server_key, "localhost", ca_key, ca.subject, sans=localhost))
write("server.key", server_key)

other_key = key()
other = cert(other_key, "other.test", inter_key, inter.subject, sans=("other.test", "*.wild.test"))
write("other-chain.pem", other, inter)  # leaf, then the intermediate: a chain file
write("other.key", other_key)

expired_key = key()
write("expired.pem", cert(expired_key, "localhost", ca_key, ca.subject, sans=localhost,
                          start=datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc),
                          end=datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)))
write("expired.key", expired_key)

rogue_key = key()
rogue = cert(rogue_key, "Some Other Root", rogue_key, None, ca=True)
untrusted_key = key()
write("untrusted.pem", cert(untrusted_key, "localhost", rogue_key, rogue.subject, sans=localhost))
write("untrusted.key", untrusted_key)

client_key = key()
client = cert(client_key, "test client", ca_key, ca.subject, client=True)
write("client.pem", client)
write("client.key", client_key)

with open("server.p12", "wb") as f:
    f.write(pkcs12.serialize_key_and_certificates(
        b"server", server_key, x509.load_pem_x509_certificate(open("server.pem", "rb").read()), None,
        serialization.BestAvailableEncryption(b"test-password")))

# The form Apple's tools and OpenSSL 1.x write: the certificates encrypted with pbeWithSHA1And40BitRC2-CBC, the
# key with 3DES, a SHA-1 MAC (OpenSSL 3's `-legacy`; Python's cryptography cannot write RC2).
subprocess.run(["openssl", "pkcs12", "-export", "-legacy", "-in", "server.pem", "-inkey", "server.key",
                "-certfile", "ca.pem", "-name", "server", "-passout", "pass:test-password",
                "-out", "server-legacy.p12"], check=True)
