package auth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"personnel/config"
)

// SecretPath returns where the generated JWT secret of a SQLite database
// lives: beside the database file.
func SecretPath(dbDSN string) string {
	path := strings.TrimPrefix(dbDSN, "file:")
	path, _, _ = strings.Cut(path, "?")
	return path + ".jwt-secret"
}

// Secret returns the key that signs tokens: PERSONNEL_JWT_SECRET when set.
// Otherwise, on SQLite outside production, a secret generated on first
// start and kept (mode 0600) beside the database, so tokens survive a
// restart. MySQL and PostgreSQL deployments and production must configure
// one: replicas sharing a database must share the secret, which a local
// file cannot do.
func Secret(cfg *config.Config) ([]byte, error) {
	if err := CheckSecret(cfg); err != nil {
		return nil, err
	}
	if cfg.JWTSecret != nil {
		return cfg.JWTSecret, nil
	}
	return fileSecret(SecretPath(cfg.DBDSN))
}

// CheckSecret returns Secret's refusal of cfg, if any, without touching
// the database or the file system, so that serve refuses to start before
// it migrates anything. (A secret that is too short or, in production, a
// placeholder is refused by config.Load already.)
func CheckSecret(cfg *config.Config) error {
	switch {
	case cfg.JWTSecret != nil:
		return nil
	case cfg.Env == config.EnvProduction:
		return errors.New("PERSONNEL_JWT_SECRET must be set when PERSONNEL_ENV=production (at least 32 bytes; generate one with: openssl rand -base64 48)")
	case cfg.DBDriver != config.DriverSQLite:
		return errors.New("PERSONNEL_JWT_SECRET must be set with PERSONNEL_DB_DRIVER=" + cfg.DBDriver + ": every replica sharing the database must sign tokens with the same secret (generate one with: openssl rand -base64 48)")
	}
	return nil
}

// fileSecret reads the secret at path, creating it first if it does not
// exist. Creation is exclusive, so two processes starting together end up
// with the same secret.
func fileSecret(path string) ([]byte, error) {
	var raw [48]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		_, werr := f.WriteString(base64.StdEncoding.EncodeToString(raw[:]) + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return nil, fmt.Errorf("writing the JWT secret %s: %w", path, werr)
		}
		slog.Info("generated a JWT secret; set PERSONNEL_JWT_SECRET to choose your own", "file", path)
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("creating the JWT secret %s: %w", path, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		slog.Warn("the JWT secret file is readable by others; chmod 600 it", "file", path, "mode", info.Mode().Perm().String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the JWT secret: %w", err)
	}
	secret := []byte(strings.TrimSpace(string(data)))
	if len(secret) < config.MinJWTSecret {
		return nil, fmt.Errorf("the JWT secret in %s is shorter than %d bytes; delete the file to generate a new one", path, config.MinJWTSecret)
	}
	return secret, nil
}
