package auth

import "crypto/md5"

// Password hashes of htpasswd files, implemented from their published definitions:
// MD5 crypt (Poul-Henning Kamp's, "$1$"; Apache's "$apr1$" differs only in the magic) and
// the traditional Unix DES crypt (FIPS 46-3 DES, 25 encryptions of a zero block with the
// expansion permutation perturbed by a 12-bit salt).

// cryptAlphabet is the 6-bit alphabet of both formats.
const cryptAlphabet = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// md5Crypt hashes pass with salt (at most 8 characters) and magic ("$1$" or "$apr1$").
func md5Crypt(pass, salt, magic string) string {
	if len(salt) > 8 {
		salt = salt[:8]
	}
	pw := []byte(pass)
	alt := md5.Sum([]byte(pass + salt + pass))
	h := md5.New()
	h.Write([]byte(pass + magic + salt))
	for n := len(pw); n > 0; n -= 16 {
		h.Write(alt[:min(n, 16)])
	}
	for i := len(pw); i != 0; i >>= 1 {
		if i&1 != 0 {
			h.Write([]byte{0})
		} else {
			h.Write(pw[:1])
		}
	}
	final := h.Sum(nil)
	for i := 0; i < 1000; i++ {
		h := md5.New()
		if i&1 != 0 {
			h.Write(pw)
		} else {
			h.Write(final)
		}
		if i%3 != 0 {
			h.Write([]byte(salt))
		}
		if i%7 != 0 {
			h.Write(pw)
		}
		if i&1 != 0 {
			h.Write(final)
		} else {
			h.Write(pw)
		}
		final = h.Sum(nil)
	}
	out := []byte(magic + salt + "$")
	put := func(v uint32, n int) {
		for ; n > 0; n-- {
			out = append(out, cryptAlphabet[v&0x3f])
			v >>= 6
		}
	}
	f := func(i int) uint32 { return uint32(final[i]) }
	put(f(0)<<16|f(6)<<8|f(12), 4)
	put(f(1)<<16|f(7)<<8|f(13), 4)
	put(f(2)<<16|f(8)<<8|f(14), 4)
	put(f(3)<<16|f(9)<<8|f(15), 4)
	put(f(4)<<16|f(10)<<8|f(5), 4)
	put(f(11), 2)
	return string(out)
}

// DES tables (FIPS 46-3), 1-based bit positions as published.
var (
	desIP = [64]byte{
		58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4,
		62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40, 32, 24, 16, 8,
		57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11, 3,
		61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7,
	}
	desE = [48]byte{
		32, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11, 12, 13, 12, 13, 14, 15, 16, 17,
		16, 17, 18, 19, 20, 21, 20, 21, 22, 23, 24, 25, 24, 25, 26, 27, 28, 29, 28, 29, 30, 31, 32, 1,
	}
	desP = [32]byte{
		16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10,
		2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25,
	}
	desPC1 = [56]byte{
		57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18,
		10, 2, 59, 51, 43, 35, 27, 19, 11, 3, 60, 52, 44, 36,
		63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22,
		14, 6, 61, 53, 45, 37, 29, 21, 13, 5, 28, 20, 12, 4,
	}
	desPC2 = [48]byte{
		14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10, 23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2,
		41, 52, 31, 37, 47, 55, 30, 40, 51, 45, 33, 48, 44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32,
	}
	desShifts = [16]byte{1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1}
	desS      = [8][64]byte{
		{14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7,
			0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8,
			4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0,
			15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13},
		{15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10,
			3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5,
			0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15,
			13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9},
		{10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8,
			13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1,
			13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7,
			1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12},
		{7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15,
			13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9,
			10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4,
			3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14},
		{2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9,
			14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6,
			4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14,
			11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3},
		{12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11,
			10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8,
			9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6,
			4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13},
		{4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1,
			13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6,
			1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2,
			6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12},
		{13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7,
			1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2,
			7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8,
			2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11},
	}
)

// desBits is a DES block or key, one bit per byte, bit 1 of FIPS 46 first.
type desBits = [64]byte

// desKeySchedule derives the 16 round keys from a 64-bit key.
func desKeySchedule(key *desBits) (ks [16][48]byte) {
	var cd [56]byte
	for i, p := range desPC1 {
		cd[i] = key[p-1]
	}
	for r := 0; r < 16; r++ {
		for s := byte(0); s < desShifts[r]; s++ {
			c0, d0 := cd[0], cd[28]
			copy(cd[0:27], cd[1:28])
			copy(cd[28:55], cd[29:56])
			cd[27], cd[55] = c0, d0
		}
		for i, p := range desPC2 {
			ks[r][i] = cd[p-1]
		}
	}
	return ks
}

// desEncrypt encrypts one block with round keys ks and expansion table e (the standard one,
// or crypt's salted permutation of it).
func desEncrypt(in *desBits, ks *[16][48]byte, e *[48]byte) (out desBits) {
	var lr desBits
	for i, p := range desIP {
		lr[i] = in[p-1]
	}
	l, r := lr[:32], lr[32:]
	var x [48]byte
	var sOut, f, next [32]byte
	for round := 0; round < 16; round++ {
		for i, p := range e {
			x[i] = r[p-1] ^ ks[round][i]
		}
		for b := 0; b < 8; b++ {
			six := x[6*b:]
			row := six[0]<<1 | six[5]
			col := six[1]<<3 | six[2]<<2 | six[3]<<1 | six[4]
			v := desS[b][row*16+col]
			for j := 0; j < 4; j++ {
				sOut[4*b+j] = (v >> (3 - j)) & 1
			}
		}
		for i, p := range desP {
			f[i] = sOut[p-1]
		}
		for i := range next {
			next[i] = l[i] ^ f[i]
		}
		copy(l, r)
		copy(r, next[:])
	}
	// The output of the last round is R16 L16, then the inverse initial permutation.
	var pre desBits
	copy(pre[:32], r)
	copy(pre[32:], l)
	for i, p := range desIP {
		out[p-1] = pre[i]
	}
	return out
}

// cryptIndex is the 6-bit value of an alphabet character (V7 crypt's mapping).
func cryptIndex(c byte) byte {
	if c > 'Z' {
		c -= 6
	}
	if c > '9' {
		c -= 7
	}
	return (c - '.') & 0x3f
}

// desCrypt is crypt(3) with a two-character salt: the 13-character result.
func desCrypt(pass, salt string) string {
	var key desBits
	for i := 0; i < 8 && i < len(pass); i++ {
		for j := 0; j < 7; j++ {
			key[i*8+j] = (pass[i] >> (6 - j)) & 1
		}
	}
	ks := desKeySchedule(&key)
	e := desE
	for i := 0; i < 2; i++ {
		c := cryptIndex(salt[i])
		for j := 0; j < 6; j++ {
			if (c>>j)&1 != 0 {
				e[6*i+j], e[6*i+j+24] = e[6*i+j+24], e[6*i+j]
			}
		}
	}
	var block desBits
	for i := 0; i < 25; i++ {
		block = desEncrypt(&block, &ks, &e)
	}
	out := []byte(salt[:2])
	for i := 0; i < 11; i++ {
		var c byte
		for j := 0; j < 6; j++ {
			c <<= 1
			if k := 6*i + j; k < 64 {
				c |= block[k]
			}
		}
		out = append(out, cryptAlphabet[c])
	}
	return string(out)
}
