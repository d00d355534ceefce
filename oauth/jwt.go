package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	_ "crypto/sha256" // registers SHA-256 for crypto.SHA256
	_ "crypto/sha512" // registers SHA-384 and SHA-512
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// parsePrivateKey reads a PEM private key: PKCS #8, PKCS #1 (RSA) or
// SEC 1 (EC). Its errors never quote the key.
func parsePrivateKey(pemText string) (crypto.Signer, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, errors.New("oauth: privateKey is not PEM")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("oauth: privateKey is not a PKCS #8, PKCS #1 or SEC 1 private key")
}

// defaultAlg returns the JWS algorithm a key suits.
func defaultAlg(k crypto.Signer) string {
	switch k := k.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve.Params().BitSize {
		case 384:
			return "ES384"
		case 521:
			return "ES512"
		}
		return "ES256"
	case ed25519.PrivateKey:
		return "EdDSA"
	}
	return "RS256"
}

// clientAssertion returns a signed JWT for the private_key_jwt client
// authentication (RFC 7523 §2.2): issuer and subject the client id,
// audience the authorization server's issuer, valid for five minutes.
func clientAssertion(k crypto.Signer, alg, clientID, audience string, now time.Time) (string, error) {
	if alg == "" {
		alg = defaultAlg(k)
	}
	header, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": rand.Text(),
	})
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sig, err := signJWS(k, alg, []byte(input))
	if err != nil {
		return "", err
	}
	return input + "." + enc.EncodeToString(sig), nil
}

func signJWS(k crypto.Signer, alg string, input []byte) ([]byte, error) {
	hashOf := func(h crypto.Hash) []byte {
		d := h.New()
		d.Write(input)
		return d.Sum(nil)
	}
	switch alg {
	case "ES256", "ES384", "ES512":
		ek, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("oauth: signing algorithm %s needs an EC key", alg)
		}
		h, size := map[string]crypto.Hash{"ES256": crypto.SHA256, "ES384": crypto.SHA384, "ES512": crypto.SHA512}[alg],
			map[string]int{"ES256": 32, "ES384": 48, "ES512": 66}[alg]
		r, s, err := ecdsa.Sign(rand.Reader, ek, hashOf(h))
		if err != nil {
			return nil, fmt.Errorf("oauth: sign client assertion: %w", err)
		}
		// JWS wants r and s as fixed-size big-endian integers (RFC 7518 §3.4).
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		s.FillBytes(out[size:])
		return out, nil
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("oauth: signing algorithm %s needs an RSA key", alg)
		}
		h := map[byte]crypto.Hash{'2': crypto.SHA256, '3': crypto.SHA384, '5': crypto.SHA512}[alg[2]]
		if alg[0] == 'P' {
			return rsa.SignPSS(rand.Reader, rk, h, hashOf(h), &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		}
		return rsa.SignPKCS1v15(rand.Reader, rk, h, hashOf(h))
	case "EdDSA":
		ek, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("oauth: signing algorithm %s needs an Ed25519 key", alg)
		}
		return ed25519.Sign(ek, input), nil
	}
	return nil, fmt.Errorf("oauth: unsupported signing algorithm %q", alg)
}
