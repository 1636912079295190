#!/bin/sh
# Certificates for the weights tests and benchmark, made with the openssl
# CLI the way the platform's signer issues a node's (role agent): EC
# P-256, O=larkbus, OU=agent, CN the node, SAN DNS:<node>,
# URI:urn:larkbus:role:agent, URI:urn:larkbus:cluster:<cluster>, client
# and server auth.
#   node_cert.sh ca DIR                      a CA: DIR/ca.pem, DIR/ca.key
#   node_cert.sh node CADIR DIR NODE [CLUSTER]
#                                            DIR/cert.pem, key.pem (0600), ca.pem
set -eu
case "$1" in
ca)
  mkdir -p "$2"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$2/ca.key" -out "$2/ca.pem" -subj /O=larkbus/CN=test-ca \
    -days 2 2>/dev/null
  ;;
node)
  ca=$2 dir=$3 node=$4 cluster=${5:-local}
  mkdir -p "$dir"
  cp "$ca/ca.pem" "$dir/ca.pem"
  printf 'subjectAltName=DNS:%s,URI:urn:larkbus:role:agent,URI:urn:larkbus:cluster:%s\nextendedKeyUsage=clientAuth,serverAuth\n' \
    "$node" "$cluster" >"$dir/ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$dir/key.pem" -out "$dir/csr" \
    -subj "/O=larkbus/OU=agent/CN=$node" 2>/dev/null
  openssl x509 -req -in "$dir/csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" \
    -CAcreateserial -days 1 -extfile "$dir/ext" -out "$dir/cert.pem" 2>/dev/null
  chmod 600 "$dir/key.pem"
  rm -f "$dir/csr" "$dir/ext"
  ;;
*) echo "usage: node_cert.sh ca DIR | node CADIR DIR NODE [CLUSTER]" >&2; exit 2 ;;
esac
