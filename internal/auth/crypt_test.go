package auth

import (
	"crypto/des"
	"math/rand/v2"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestDESMatchesStandardLibrary checks the DES core (used by crypt) against crypto/des.
func TestDESMatchesStandardLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 200; n++ {
		var key, block [8]byte
		for i := range key {
			key[i], block[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		c, _ := des.NewCipher(key[:])
		var want [8]byte
		c.Encrypt(want[:], block[:])
		toBits := func(b [8]byte) (out desBits) {
			for i := 0; i < 64; i++ {
				out[i] = (b[i/8] >> (7 - i%8)) & 1
			}
			return out
		}
		kb, bb := toBits(key), toBits(block)
		ks := desKeySchedule(&kb)
		e := desE
		got := desEncrypt(&bb, &ks, &e)
		if got != toBits(want) {
			t.Fatalf("key %x block %x: DES differs from crypto/des", key, block)
		}
	}
}

func TestPasswordHashes(t *testing.T) {
	bc, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	// DES vectors from perl's crypt(3); MD5 ones from openssl passwd -1 / -apr1.
	for _, c := range []struct {
		pass, hash string
	}{
		{"123456", "ab01FAX.bQRSU"},
		{"password", "xYJPQON7N9.Ls"},
		{"", "..X8NBuQ4l6uQ"},
		{"longerthan8chars", "ZzB6eMPDY2lRE"},
		{"secret", "$1$saltsalt$9xy1btjgzLYfb7hivXtC//"},
		{"123456", "$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf."}, // pulsar-client-go's .htpasswd
		{"s3cret", string(bc)},
	} {
		if !checkPassword(c.pass, c.hash) {
			t.Errorf("%q does not verify against %s", c.pass, c.hash)
		}
		if checkPassword(c.pass+"x", c.hash) && len(c.pass) < 8 {
			t.Errorf("%q+x verifies against %s", c.pass, c.hash)
		}
		if !knownHash(c.hash) {
			t.Errorf("%s not recognised", c.hash)
		}
	}
}
