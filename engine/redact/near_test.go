package redact

import "testing"

// TestPhrasedSecrets: passwords given in a sentence rather than after
// "password is", a bare PIN near what it opens, a wallet's recovery
// phrase and a Twilio key are found, with the part that is the secret;
// sentences that only talk about passwords and look-alikes are left alone.
func TestPhrasedSecrets(t *testing.T) {
	found := []struct{ in, kind, secret string }{
		{"my laptop login is Lap_T0p!2026", "password", "Lap_T0p!2026"},
		{"set POSTGRES_PASSWORD to Pg!Local_77 in compose", "password", "Pg!Local_77"},
		{"password123 isn't it, it's Sn0wy#Owl5", "password", "Sn0wy#Owl5"},
		{"pgpass line db.internal:5432:app:appuser:Vr9!kLm2Qz", "password", "Vr9!kLm2Qz"},
		{"use admin:Adm1n!Portal to log into the portal", "password", "Adm1n!Portal"},
		{"front desk keypad: 4826#", "password", "4826#"},
		{"Mon mot de passe Netflix c'est soleil1985", "password", "soleil1985"},
		{"le code du wifi: maison2023", "password", "maison2023"},
		{"银行卡密码 884213", "password", "884213"},
		{"와이파이 비번 sarang0214", "password", "sarang0214"},
		{"login: jdoe, password summer2021", "password", "summer2021"},
		{"passcode 4471 for the gate", "password", "4471"},
		{"my wallet seed: tattoo glare velvet orbit candle mimic ripple fossil grape humble lunar oyster", "seed-phrase",
			"tattoo glare velvet orbit candle mimic ripple fossil grape humble lunar oyster"},
		{"recovery phrase is 1. tattoo 2. glare 3. velvet 4. orbit 5. candle 6. mimic 7. ripple 8. fossil 9. grape 10. humble 11. lunar 12. oyster",
			"seed-phrase", "tattoo 2. glare 3. velvet 4. orbit 5. candle 6. mimic 7. ripple 8. fossil 9. grape 10. humble 11. lunar 12. oyster"},
		{"twilio auth: SK2b7f9c1d4e6a8b0c2d4f6a8b0c2d4e6f", "twilio-key", "SK2b7f9c1d4e6a8b0c2d4f6a8b0c2d4e6f"},
		{"https://acct.blob.core.windows.net/c?sv=2021-06-08&sp=r&sig=q8Wk3%2Bz9Lm2Xp7Rt4Vb1Nc6Yd0Fe5Gh8%3D", "url-signature",
			"q8Wk3%2Bz9Lm2Xp7Rt4Vb1Nc6Yd0Fe5Gh8%3D"},
		{"mapbox sk.eyJ1IjoiYWNtZSIsImEiOiJja2x4N3EyIn0.Xk2LmN9pR3sT5vW8yZ1aC4", "mapbox-token",
			"sk.eyJ1IjoiYWNtZSIsImEiOiJja2x4N3EyIn0.Xk2LmN9pR3sT5vW8yZ1aC4"},
		{"eth private key 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318", "api-key",
			"0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"},
		{"redis-cli -a Xk2LmN9pR3sT -h cache.internal", "password", "Xk2LmN9pR3sT"},
		{"curl -u alice:W0nderl4nd! https://api.example.com", "password", "W0nderl4nd!"},
		{"mon code PIN est le 4821", "password", "4821"},
		{"카드 비밀번호 4자리는 7315", "password", "7315"},
		{"le mdp de mon compte Free c'est toujours chaton1234", "password", "chaton1234"},
		{"La contraseña del correo del trabajo sigue siendo oficina2021", "password", "oficina2021"},
		{"Zugang zum Router: admin / Fritz!Box2024", "password", "Fritz!Box2024"},
		{"Die PIN meines Handys lautet 5928", "password", "5928"},
		{"the wifi code is BlueSky2024", "password", "BlueSky2024"},
	}
	for _, tt := range found {
		fs := Find(tt.in)
		if len(fs) != 1 || fs[0].Kind != tt.kind || tt.in[fs[0].Start:fs[0].End] != tt.secret {
			t.Errorf("Find(%q) = %+v, want one %s %q", tt.in, fs, tt.kind, tt.secret)
		}
	}
	for _, in := range []string{
		"the password field accepts utf8mb4 characters",
		"password hashing moved to argon2id in v3",
		"reset your password via the link in mail 2024-05-01",
		"my password manager is 1Password since 2019",
		"the wifi router model is TPLink-AX3000 and the password is on its label",
		"I need to change my bank card PIN next week",
		"login page loads in 300ms on ipad2023",
		"passwords must be 12 chars, e.g. like abcd1234efgh in the docs",
		"My seed phrase is safely in the vault, not here",
		"the mnemonic device I use: every good boy does fine",
		"the login service runs as svc_login_2 on port 8443",
		"twilio account AC2b7f9c1d4e6a8b0c2d4f6a8b0c2d4e6f is ours",
		"SKU SK12 is out of stock",
		"the private key is stored in ~/.ssh/id_ed25519",
		"private key: see the vault entry deploy-prod",
		"curl -u alice https://api.example.com asks for the password",
		"https://example.com/search?q=signature&sig=short",
		"la contraseña es la misma",
		"das Passwort ist das alte",
		"le code est le meilleur",
		"Zugang zum Büro: über den Hof / Tür links",
		"die PIN meines Handys ist gesperrt",
		"der Zugang zur Garage ist hinten",
		"my PIN code reminder is on the fridge",
	} {
		if fs := Find(in); len(fs) > 0 {
			t.Errorf("Find(%q) = %s %q, want nothing", in, fs[0].Kind, in[fs[0].Start:fs[0].End])
		}
	}
}
