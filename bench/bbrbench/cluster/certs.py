"""The cluster's certificate authority (init, add-host, add-user, revoke, its CRL) and the TLS settings
every member loads: Dask's, plus the revocation list and, on connecting, the peer's SANs.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import shutil
import ssl
from pathlib import Path
from typing import Any

from ..errors import HarnessError, UsageError

log = logging.getLogger(__name__)

CA_FILE, CERT_FILE, KEY_FILE, CRL_FILE = "ca.pem", "node.pem", "node-key.pem", "crl.pem"
# Kept only in the authority's directory, with whoever runs `cluster init`.
CA_KEY_FILE, ISSUED_FILE = "ca-key.pem", "issued.json"
# Certificates start this far back, so that a host whose clock is a little behind accepts them.
BACKDATE = datetime.timedelta(minutes=10)
EXPIRY_WARN = datetime.timedelta(days=30)
CERT_DAYS = 365




def _x509() -> Any:
    try:
        from cryptography import x509
    except ImportError:
        raise HarnessError("the cluster needs cryptography and Dask distributed: pip install 'bbrbench[cluster]'") \
            from None
    return x509


def _write_private(path: Path, data: bytes) -> None:
    """A key file: created 0600 (never readable by others, not even for a moment), replaced whole."""
    tmp = path.with_name(path.name + ".new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    tmp.rename(path)


def _private_key_bytes(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem(obj: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization
    return bytes(obj.public_bytes(serialization.Encoding.PEM))


def _validity() -> tuple[datetime.datetime, datetime.datetime]:
    now = datetime.datetime.now(datetime.UTC)
    return now - BACKDATE, now + datetime.timedelta(days=CERT_DAYS)


def _load_ca(ca_dir: Path) -> tuple[Any, Any, dict[str, Any]]:
    """The authority's certificate, key (checked to be 0600) and register of issued certificates."""
    x509 = _x509()
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    for n in (CA_FILE, CA_KEY_FILE, ISSUED_FILE):
        if not (ca_dir / n).is_file():
            raise HarnessError(f"cluster: {ca_dir / n} is missing; `bbrbench cluster init --ca {ca_dir}` first")
    _check_private(ca_dir / CA_KEY_FILE)
    return (x509.load_pem_x509_certificate((ca_dir / CA_FILE).read_bytes()),
            load_pem_private_key((ca_dir / CA_KEY_FILE).read_bytes(), None),
            json.loads((ca_dir / ISSUED_FILE).read_text()))


def _write_crl(ca_dir: Path, ca: Any, ca_key: Any, issued: dict[str, Any]) -> None:
    """crl.pem: the serials of every revoked certificate, signed by the authority."""
    x509 = _x509()
    from cryptography.hazmat.primitives import hashes
    now, until = _validity()
    builder = x509.CertificateRevocationListBuilder().issuer_name(ca.subject).last_update(now).next_update(until)
    for entry in issued.values():
        if entry.get("revoked"):
            builder = builder.add_revoked_certificate(
                x509.RevokedCertificateBuilder().serial_number(int(entry["serial"], 16))
                .revocation_date(datetime.datetime.fromisoformat(entry["revoked"])).build())
    (ca_dir / CRL_FILE).write_bytes(_pem(builder.sign(ca_key, hashes.SHA256())))
    (ca_dir / ISSUED_FILE).write_text(json.dumps(issued, indent=2) + "\n")


def init_ca(ca_dir: Path, force: bool = False) -> str:
    """A fresh authority in ca_dir (ca.pem, ca-key.pem 0600, an empty crl.pem, issued.json). Its key stays
    here: whoever holds it can make members. Returns when its certificate expires."""
    x509 = _x509()
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    if (ca_dir / CA_KEY_FILE).exists() and not force:
        raise UsageError(f"cluster init: {ca_dir} already holds an authority; pass --force to replace it "
                         f"(every certificate it issued stops working)")
    start, until = _validity()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bbrbench cluster CA")])
    key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(until)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .sign(key, hashes.SHA256()))
    ca_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write_private(ca_dir / CA_KEY_FILE, _private_key_bytes(key))
    (ca_dir / CA_FILE).write_bytes(_pem(ca))
    _write_crl(ca_dir, ca, key, {})
    return until.date().isoformat()


def issue(ca_dir: Path, name: str, out: Path, addresses: list[str] | None) -> str:
    """A member's directory `out` (ca.pem, crl.pem, node.pem, node-key.pem 0600): for a host (scheduler
    or worker; `addresses`, its names and IP addresses, become its SANs, which peers check) usable as
    server and client, for a user (addresses None) as client only. Returns its expiry date."""
    x509 = _x509()
    import ipaddress

    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    if not name or not all(c.isalnum() or c in "._-" for c in name):
        raise UsageError(f"cluster: name {name!r}: letters, digits and . _ - only")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"cluster: {out} is not empty; give a new directory for the certificate")
    ca, ca_key, issued = _load_ca(ca_dir)
    if name in issued and not issued[name].get("revoked"):
        raise UsageError(f"cluster: {name} already has a certificate; revoke it first")
    sans: list[Any] = []
    for a in addresses or []:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(a)))
        except ValueError:
            sans.append(x509.DNSName(a))
    if addresses is None:
        sans.append(x509.UniformResourceIdentifier(f"urn:bbrbench:user:{name}"))
    elif not sans:
        raise UsageError("cluster add-host: --address: at least one name or IP address of the host")
    usage = ([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH] if addresses is not None
             else [ExtendedKeyUsageOID.CLIENT_AUTH])
    start, until = _validity()
    until = min(until, ca.not_valid_after_utc)
    key = ec.generate_private_key(ec.SECP256R1())
    kind = "host" if addresses is not None else "user"
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"bbrbench {kind} {name}")]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(until)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
            .sign(ca_key, hashes.SHA256()))
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write_private(out / KEY_FILE, _private_key_bytes(key))
    (out / CERT_FILE).write_bytes(_pem(cert))
    shutil.copyfile(ca_dir / CA_FILE, out / CA_FILE)
    shutil.copyfile(ca_dir / CRL_FILE, out / CRL_FILE)
    issued[name] = {"kind": kind, "serial": f"{cert.serial_number:x}", "not_after": until.isoformat(),
                    "addresses": addresses or []}
    _write_crl(ca_dir, ca, ca_key, issued)
    return until.date().isoformat()


def revoke(ca_dir: Path, name: str) -> None:
    """Adds name's certificate to the authority's crl.pem (which every member must then be given)."""
    ca, ca_key, issued = _load_ca(ca_dir)
    if name not in issued:
        raise UsageError(f"cluster revoke: {name}: no certificate of that name (issued: {', '.join(issued) or 'none'})")
    if issued[name].get("revoked"):
        raise UsageError(f"cluster revoke: {name} is revoked already")
    issued[name]["revoked"] = datetime.datetime.now(datetime.UTC).isoformat()
    _write_crl(ca_dir, ca, ca_key, issued)


def _check_private(path: Path) -> None:
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise HarnessError(f"cluster: {path} is readable by others (mode {mode:o}); chmod 600 it")


def certificate(path: Path) -> Any:
    return _x509().load_pem_x509_certificate(path.read_bytes())


def expiry(directory: Path) -> datetime.datetime:
    """When the member's certificate in directory expires; warned about within EXPIRY_WARN."""
    cert = certificate(directory / CERT_FILE)
    until: datetime.datetime = cert.not_valid_after_utc
    left = until - datetime.datetime.now(datetime.UTC)
    if left <= datetime.timedelta(0):
        raise HarnessError(f"cluster: {directory / CERT_FILE} expired on {until.date()}; ask for a new one "
                           f"(cluster add-host/add-user)")
    if left < EXPIRY_WARN:
        log.warning("cluster: %s expires on %s (in %d days)", directory / CERT_FILE, until.date(), left.days)
    return until


def security(directory: Path) -> Any:
    """Dask's TLS settings for a member holding directory's certificate."""
    for n in (CA_FILE, CRL_FILE, CERT_FILE, KEY_FILE):
        if not (directory / n).is_file():
            raise HarnessError(f"cluster: {directory / n} is missing; ask whoever runs `bbrbench cluster init` for "
                               f"a certificate (cluster add-host/add-user) and give its directory (--cluster-certs)")
    _check_private(directory / KEY_FILE)
    expiry(directory)
    return CheckedSecurity(tls_ca_file=str(directory / CA_FILE), tls_client_cert=str(directory / CERT_FILE),
                   tls_client_key=str(directory / KEY_FILE), tls_scheduler_cert=str(directory / CERT_FILE),
                   tls_scheduler_key=str(directory / KEY_FILE), tls_worker_cert=str(directory / CERT_FILE),
                   tls_worker_key=str(directory / KEY_FILE), require_encryption=True)


try:
    from distributed.security import Security as _Security
except ImportError:  # without the cluster extra; connect() says what to install
    _Security = object  # type: ignore[misc,assignment]


class CheckedSecurity(_Security):
    """Dask's TLS contexts, which also check the authority's revocation list (crl.pem beside ca.pem) and,
    on connecting, the peer's name or address against its certificate's SANs (Dask leaves that off). A
    listener reads crl.pem again at every handshake, so that a new list takes effect without a restart.
    A class of this module: the nanny pickles it to its worker."""

    def _checked_context(self, tls: dict[str, Any], purpose: ssl.Purpose) -> ssl.SSLContext:
        ctx: ssl.SSLContext = super()._get_tls_context(tls, purpose)
        ctx.load_verify_locations(cafile=str(Path(tls["ca_file"]).with_name(CRL_FILE)))
        ctx.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
        ctx.check_hostname = purpose == ssl.Purpose.SERVER_AUTH
        return ctx

    def _get_tls_context(self, tls: dict[str, Any], purpose: ssl.Purpose) -> ssl.SSLContext:
        ctx = self._checked_context(tls, purpose)
        if purpose == ssl.Purpose.CLIENT_AUTH:
            # OpenSSL calls this for every ClientHello (with or without SNI); the fresh context's store,
            # with the revocation list as it is now, verifies the peer's certificate.
            def reload(sock: ssl.SSLObject | ssl.SSLSocket, _name: str | None, _ctx: ssl.SSLContext) -> None:
                sock.context = self._checked_context(tls, purpose)
            ctx.sni_callback = reload
        return ctx


